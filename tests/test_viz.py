"""Explanations: rule text, DOT drawings (truncation, highlighted paths, visit shading), rendering."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from interp_rl.errors import InterpRLError, InvalidParameterError, ObservationError, RenderError
from interp_rl.kinds.tree import TreeProgram
from interp_rl.program import Controller, Signal
from interp_rl.viz import (
    decision_path_text,
    export_text,
    leaf_visit_counts,
    render,
    to_dot,
)

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="the Graphviz 'dot' program is not installed (apt-get install graphviz)",
)


def _controller() -> Controller:
    """Two splits; leaf 4 is linear; actions clipped to [-1, 1].

    angle <= 0.21 -> leaf 1; else vx <= -0.5 -> leaf 3; else leaf 4.
    """
    prog = TreeProgram.from_leaves(
        feature=[0, -1, 1, -1, -1], threshold=[0.21, 0, -0.5, 0, 0],
        left=[1, -1, 3, -1, -1], right=[2, -1, 4, -1, -1],
        intercept=[[0, 0], [-0.52, 0.1], [0, 0], [0.3, -0.25], [0.12, 0.0]],
        coef={4: {(0, 1): -0.31, (1, 0): 1.5, (1, 1): 0.25}}, obs_dim=2,
        n_samples=[2000, 1234, 766, 600, 166], action_low=[-1, -1], action_high=[1, 1],
    )
    return Controller(
        prog, features=[Signal("thigh_joint_angle", "rad"), Signal("torso_vx", "m/s")],
        actions=[Signal("thigh_torque", "N·m"), Signal("leg_torque")],
    )


def _comb(n_splits: int) -> Controller:
    """A comb: split i sends ``x0 <= i`` to a leaf and the rest to split i + 1 (n_splits + 1 leaves)."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    for i in range(n_splits):
        node = len(feature)
        feature += [0, -1]
        threshold += [float(i), 0.0]
        left += [node + 1, -1]
        right += [node + 2, -1]
        # node + 1 is the leaf; node + 2 is the next split (or the last leaf).
    feature.append(-1)
    threshold.append(0.0)
    left.append(-1)
    right.append(-1)
    intercept = [[float(k)] for k in range(len(feature))]
    prog = TreeProgram.from_leaves(feature=feature, threshold=threshold, left=left, right=right,
                                   intercept=intercept, obs_dim=1)
    return Controller(prog, features=[Signal("x", "m")], actions=[Signal("u")])


def _styled_lines(dot: str) -> list[str]:
    """The node/edge statements drawn in the highlight style, stripped of their attributes."""
    return [line.strip().split(" [")[0] for line in dot.splitlines() if 'color="#d62728"' in line]


# --- export_text ----------------------------------------------------------------------


def test_export_text_snapshot() -> None:
    assert export_text(_controller()) == (
        "|--- thigh_joint_angle [rad] <= 0.210\n"
        "|   |--- leaf 1: thigh_torque [N·m] = -0.520, leg_torque = 0.100   (62% of data)\n"
        "|--- thigh_joint_angle [rad] >  0.210\n"
        "|   |--- torso_vx [m/s] <= -0.500\n"
        "|   |   |--- leaf 2: thigh_torque [N·m] = 0.300, leg_torque = -0.250   (30% of data)\n"
        "|   |--- torso_vx [m/s] >  -0.500\n"
        "|   |   |--- leaf 3: thigh_torque [N·m] = 0.120 - 0.310*torso_vx, "
        "leg_torque = 1.500*thigh_joint_angle + 0.250*torso_vx   (8% of data)\n"
        "actions are clipped to thigh_torque [N·m] in [-1.000, 1.000], leg_torque in [-1.000, 1.000]"
    )


def test_export_text_precision_and_no_counts_or_bounds() -> None:
    prog = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[1e-5, 0, 0], left=[1, -1, -1],
                                   right=[2, -1, -1], intercept=[[0.0], [-0.0], [2.0]],
                                   coef={1: {(0, 0): -1.0}}, obs_dim=1)
    ctrl = Controller(prog, features=[Signal("x")], actions=[Signal("u")])
    # A tiny threshold keeps significant digits instead of printing 0; a zero intercept is dropped.
    assert export_text(ctrl, precision=1) == (
        "|--- x <= 1e-05\n"
        "|   |--- leaf 1: u = -1.0*x\n"
        "|--- x >  1e-05\n"
        "|   |--- leaf 2: u = 2.0"
    )


def test_export_text_max_depth_truncates_with_leaf_counts() -> None:
    note = "actions are clipped to thigh_torque [N·m] in [-1.000, 1.000], leg_torque in [-1.000, 1.000]"
    assert export_text(_controller(), max_depth=1) == (
        "|--- thigh_joint_angle [rad] <= 0.210\n"
        "|   |--- leaf 1: thigh_torque [N·m] = -0.520, leg_torque = 0.100   (62% of data)\n"
        "|--- thigh_joint_angle [rad] >  0.210\n"
        "|   |--- ... (2 leaves below)\n" + note
    )
    assert export_text(_controller(), max_depth=0) == "|--- ... (3 leaves below)\n" + note
    assert export_text(_controller(), max_depth=2) == export_text(_controller())
    assert export_text(_comb(6), max_depth=2).splitlines()[-1] == "|   |   |--- ... (5 leaves below)"


def test_bad_max_depth_is_a_one_line_error() -> None:
    with pytest.raises(InvalidParameterError) as exc:
        export_text(_controller(), max_depth=-1)
    assert str(exc.value) == (
        "The 'max_depth' parameter of export_text must be an int in [0, inf). Got -1 instead."
    )


# --- to_dot ---------------------------------------------------------------------------


def test_to_dot_snapshot_and_determinism() -> None:
    expected = (
        "digraph controller {\n"
        '  graph [label="actions are clipped to thigh_torque [N·m] in [-1, 1], leg_torque in [-1, 1]", '
        'labelloc="t", fontname="Helvetica"];\n'
        '  node [shape=box, fontname="Helvetica", fontsize=11];\n'
        '  edge [fontname="Helvetica", fontsize=10];\n'
        '  n0 [label="thigh_joint_angle <= 0.21 rad"];\n'
        '  n0 -> n1 [label="yes"];\n'
        '  n1 [label="leaf 1\\nthigh_torque [N·m] = -0.52\\nleg_torque = 0.1\\n62% of data", style="rounded,filled", '
        'fillcolor="#f2f2f2"];\n'
        '  n0 -> n2 [label="no"];\n'
        '  n2 [label="torso_vx <= -0.5 m/s"];\n'
        '  n2 -> n3 [label="yes"];\n'
        '  n3 [label="leaf 2\\nthigh_torque [N·m] = 0.3\\nleg_torque = -0.25\\n30% of data", style="rounded,filled", '
        'fillcolor="#f2f2f2"];\n'
        '  n2 -> n4 [label="no"];\n'
        '  n4 [label="leaf 3\\nthigh_torque [N·m] = 0.12 - 0.31*torso_vx\\n'
        'leg_torque = 1.5*thigh_joint_angle\\n    + 0.25*torso_vx\\n8% of data", style="rounded,filled", '
        'fillcolor="#f2f2f2"];\n'
        "}"
    )
    assert to_dot(_controller()) == expected
    assert to_dot(_controller()) == expected


def test_to_dot_title_goes_above_the_bounds_note() -> None:
    dot = to_dot(_controller(), title="Hopper-v5, DAgger")
    assert '  graph [label="Hopper-v5, DAgger\\nactions are clipped to ' in dot


def test_to_dot_max_depth_replaces_subtrees_with_one_ellipsis_node() -> None:
    dot = to_dot(_controller(), max_depth=1)
    assert '  n2 [label="… 2 leaves", style="dashed"];' in dot.splitlines()
    assert "n3" not in dot and "n4" not in dot
    assert "torso_vx" not in dot

    comb = _comb(6)  # depth 6, 7 leaves
    dot = to_dot(comb, max_depth=2)
    statements = [line for line in dot.splitlines() if re.match(r"  n\d+ ", line)]
    # Splits at depth 0 and 1, their two leaves, and one stand-in for the 5 leaves below: 5 nodes, 4 edges.
    assert len([s for s in statements if "->" not in s]) == 5
    assert len([s for s in statements if "->" in s]) == 4
    assert re.findall(r"… (\d+) leaves", dot) == ["5"]
    assert to_dot(comb, max_depth=0).count("… 7 leaves") == 1
    assert to_dot(comb, max_depth=6) == to_dot(comb)


def test_highlight_path_marks_exactly_its_nodes_and_edges() -> None:
    ctrl = _controller()
    path = ctrl.program.decision_path(np.array([0.5, -2.0]))
    assert path == [0, 2, 3]
    assert _styled_lines(to_dot(ctrl, highlight_path=path)) == ["n0", "n0 -> n2", "n2", "n2 -> n3", "n3"]
    assert _styled_lines(to_dot(ctrl)) == []
    # A path cut by max_depth highlights the stand-in that holds the rest of it.
    assert _styled_lines(to_dot(ctrl, highlight_path=path, max_depth=1)) == ["n0", "n0 -> n2", "n2"]


def test_highlight_path_must_be_a_parent_child_chain() -> None:
    with pytest.raises(InvalidParameterError) as exc:
        to_dot(_controller(), highlight_path=[0, 3])
    assert str(exc.value) == (
        "highlight_path must run from parent to child like program.decision_path(x); "
        "node 3 is not a child of node 0."
    )
    with pytest.raises(InvalidParameterError, match=r"The 'highlight_path' parameter of to_dot must be node ids in \[0, 5\). Got 9 instead."):
        to_dot(_controller(), highlight_path=[0, 9])


def test_leaf_visits_show_percentages_summing_to_100_and_shade_the_busiest_leaf() -> None:
    ctrl = _controller()
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(997, 2))
    counts = leaf_visit_counts(ctrl, X)
    assert counts.shape == (5,) and counts.dtype == np.int64
    assert counts[~ctrl.program.is_leaf].tolist() == [0, 0]
    assert counts.sum() == 997
    np.testing.assert_array_equal(counts, np.bincount(ctrl.program.apply(X), minlength=5))

    dot = to_dot(ctrl, leaf_visits=counts)
    shown = {int(n): (int(p), int(c)) for n, p, c in re.findall(r"  n(\d+) \[.*visits (\d+)% \((\d+)\)", dot)}
    assert sorted(shown) == [1, 3, 4]
    assert sum(p for p, _ in shown.values()) == 100
    assert {n: c for n, (_, c) in shown.items()} == {n: int(counts[n]) for n in (1, 3, 4)}
    busiest = int(np.argmax(counts))
    assert f'  n{busiest} [' in dot and re.search(rf'  n{busiest} \[.*fillcolor="#08519c"', dot)
    # A mapping gives the same drawing as the array.
    assert to_dot(ctrl, leaf_visits={n: int(counts[n]) for n in (1, 3, 4)}) == dot


def test_leaf_visit_percentages_round_to_exactly_100() -> None:
    dot = to_dot(_controller(), leaf_visits={1: 1, 3: 1, 4: 1})
    assert re.findall(r"visits (\d+)%", dot) == ["34", "33", "33"]
    dot = to_dot(_controller(), leaf_visits={1: 3}, max_depth=1)
    assert re.findall(r"visits (\d+)% \((\d+)\)", dot) == [("100", "3"), ("0", "0")]
    assert '  n2 [label="… 2 leaves\\nvisits 0% (0)", style="dashed,filled", fillcolor="#f7fbff"' in dot


def test_leaf_visits_must_count_leaves_only() -> None:
    with pytest.raises(InvalidParameterError, match="counts visits at internal node 0"):
        to_dot(_controller(), leaf_visits=[1, 0, 0, 0, 0])
    with pytest.raises(InvalidParameterError, match=r"must be one count per node, shape \(5,\). Got 'shape \(3,\)' instead."):
        to_dot(_controller(), leaf_visits=[1, 0, 0])


def test_linear_leaves_show_their_largest_terms_first() -> None:
    prog = TreeProgram.from_leaves(feature=[-1], threshold=[0.0], left=[-1], right=[-1], intercept=[[0.5]],
                                   coef={0: {(0, 0): 0.1, (0, 1): -3.0, (0, 2): 0.2, (0, 3): 2.0, (0, 4): -0.3}},
                                   obs_dim=5)
    ctrl = Controller(prog, features=[Signal(f"f{i}") for i in range(5)], actions=[Signal("u")])
    assert 'label="leaf 1\\nu = 0.5 - 3*f1 + 2*f3 + … (3 more terms)"' in to_dot(ctrl, max_terms=2)
    assert "u = 0.500 + 0.100*f0 - 3.000*f1 + 0.200*f2 + 2.000*f3 - 0.300*f4" in export_text(ctrl)


# --- decision_path_text ---------------------------------------------------------------


def test_decision_path_text_names_values_and_clipping() -> None:
    ctrl = _controller()
    assert decision_path_text(ctrl, [1.0, 0.0]) == (
        "thigh_joint_angle = 1 rad > 0.21\n"
        "torso_vx = 0 m/s > -0.5\n"
        "→ leaf 3 of 3 (8% of data)\n"
        "  thigh_torque [N·m] = 0.12 - 0.31*torso_vx = 0.12\n"
        "  leg_torque = 1.5*thigh_joint_angle + 0.25*torso_vx = 1.5 → clipped to 1"
    )
    assert decision_path_text(ctrl, [[0.2, 7.0]]) == (
        "thigh_joint_angle = 0.2 rad <= 0.21\n"
        "→ leaf 1 of 3 (62% of data)\n"
        "  thigh_torque [N·m] = -0.52\n"
        "  leg_torque = 0.1"
    )


def test_decision_path_text_shows_enough_digits_to_tell_value_from_threshold() -> None:
    text = decision_path_text(_controller(), [0.2101, 0.0])
    assert text.splitlines()[0] == "thigh_joint_angle = 0.2101 rad > 0.21"


def test_decision_path_text_takes_one_observation() -> None:
    with pytest.raises(ObservationError, match="explains one observation; got 2 rows"):
        decision_path_text(_controller(), np.zeros((2, 2)))
    with pytest.raises(ObservationError, match="obs has 3 features"):
        decision_path_text(_controller(), np.zeros(3))


# --- escaping and rendering -----------------------------------------------------------


def _awkward() -> Controller:
    prog = TreeProgram.from_leaves(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1],
                                   right=[2, -1, -1], intercept=[[0.0], [-1.0], [1.0]], obs_dim=1)
    return Controller(prog, features=[Signal('say "hi" <b>', 'a\\b')], actions=[Signal("u>v\nw")])


def test_labels_with_quotes_backslashes_and_newlines_are_escaped() -> None:
    dot = to_dot(_awkward(), title='t "q" \\')
    assert '  n0 [label="say \\"hi\\" <b> <= 0.5 a\\\\b"];' in dot
    assert 'label="leaf 1\\nu>v w = -1"' in dot
    assert 'graph [label="t \\"q\\" \\\\", labelloc="t"' in dot


@needs_dot
def test_render_escaped_labels_to_svg(tmp_path: Path) -> None:
    out = render(to_dot(_awkward(), title='t "q" \\'), tmp_path / "awkward.svg")
    svg = out.read_text(encoding="utf-8")
    assert "say &quot;hi&quot; &lt;b&gt; &lt;= 0.5 a\\b" in svg
    assert "t &quot;q&quot; \\" in svg


@needs_dot
def test_render_svg_and_png(tmp_path: Path) -> None:
    ctrl = _controller()
    svg_path = render(to_dot(ctrl), tmp_path / "sub" / "tree.svg")
    assert svg_path == tmp_path / "sub" / "tree.svg"
    svg = svg_path.read_text(encoding="utf-8")
    assert (svg.startswith("<?xml") or "<svg" in svg) and "thigh_joint_angle" in svg
    png = render(to_dot(ctrl, leaf_visits={1: 2, 4: 1}), tmp_path / "tree.PNG").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pdf = render(to_dot(ctrl), tmp_path / "tree.bin", format="pdf").read_bytes()
    assert pdf.startswith(b"%PDF")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub", "tree.PNG", "tree.bin"]  # no temp files


def test_render_unknown_suffix_names_it_and_the_accepted_ones(tmp_path: Path) -> None:
    with pytest.raises(RenderError) as exc:
        render("digraph { a }", "tree.jpg")
    assert str(exc.value) == "Cannot render to 'tree.jpg': unknown suffix '.jpg'; use one of .svg, .png, .pdf, .dot."
    assert isinstance(exc.value, InterpRLError)
    with pytest.raises(RenderError) as exc:
        render("digraph { a }", "tree")
    assert str(exc.value) == "Cannot render to 'tree': unknown suffix ''; use one of .svg, .png, .pdf, .dot."
    with pytest.raises(RenderError) as exc:
        render("digraph { a }", tmp_path / "tree.svg", format="gif")
    assert str(exc.value) == "Unknown render format 'gif'; use one of svg, png, pdf, dot."
    assert not (tmp_path / "tree.svg").exists()


def test_render_without_the_dot_program_says_to_install_graphviz(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RenderError) as exc:
        render(to_dot(_controller()), tmp_path / "tree.svg")
    assert str(exc.value) == (
        "Rendering needs the Graphviz 'dot' program, which is not on PATH; install Graphviz "
        "(e.g. `apt-get install graphviz` or `brew install graphviz`) or write the DOT text instead (a .dot file)."
    )
    assert list(tmp_path.iterdir()) == []


@needs_dot
def test_render_bad_dot_is_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(RenderError) as exc:
        render("digraph { a -> }", tmp_path / "bad.svg")
    assert str(exc.value).startswith("Graphviz could not render the DOT text: ")
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "bad.svg").exists()
