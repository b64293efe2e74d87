"""Our frontier against the published peers: the peer file, the verdicts per budget, and the report section."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.analyses import ANALYSES, ReportContext
from benchmarks.peers import BUDGETS, Peer, best_within, frontier, load_peers, our_points, peer_within, verdict
from benchmarks.records import summarise
from benchmarks.suite import Cell, SuiteError, load_suite
from interp_rl.document import Document
from interp_rl.errors import InterpRLError


def _rec(teacher: str, method: str, seed: int, params: int, returns: list[float], fails: list[float] | None = None,
         task: str = "HalfCheetah-v5") -> dict[str, Any]:
    mean = sum(returns) / len(returns)
    return {"cell": {"teacher": teacher, "method": method, "size": 8, "seed": seed}, "task": task,
            "method": method, "kind": "mixture", "percent_of_teacher": mean / 100, "worst_percent_of_teacher": 0,
            "teacher": {"return_mean": 10000.0, "returns": [10000.0]},
            "student": {"return_mean": mean, "returns": returns},
            "failures": {"threshold": 5000.0, "returns": fails} if fails is not None else None,
            "details": {}, "config": {}, "size": {"parameters": params}, "suite": "smose",
            "distill_seconds": 600.0 + 60 * seed, "distill_cores": 2}


def test_the_shipped_peer_file_holds_the_issues_numbers_and_the_zoo_on_v5() -> None:
    peers = load_peers()
    smose = {p.task: p.ret for p in peers if p.family == "SMoSE"}
    assert smose == {"HalfCheetah": 7310, "Walker2d": 4224, "Hopper": 2816, "Ant": 3245, "Swimmer": 45,
                     "Reacher": -5.49}
    assert all(p.env == "v4" and p.steps == 1_000_000 for p in peers if p.family == "SMoSE")
    # the budget targets of issue 44 are the best peer within each budget, whatever its environment version
    assert peer_within(peers, "HalfCheetah", 1000).ret == 7310 and peer_within(peers, "Walker2d", 1000).ret == 4224
    assert peer_within(peers, "HalfCheetah", 128).ret == 5138 and peer_within(peers, "Hopper", 128).ret == 3344
    assert peer_within(peers, "Swimmer", 32).ret == 355 and peer_within(peers, "Swimmer", 32).env == "v3"
    assert peer_within(peers, "Reacher", 128) is None
    zoo = [p for p in peers if p.family.startswith("zoo")]
    assert len(zoo) == 48 and all(p.env == "v5" and p.worst is not None for p in zoo)


def test_a_bad_peer_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "peers.toml"
    bad.write_text('[[peers]]\ntask = "HalfCheetah"\nfamily = "x"\nlabel = "x"\nreturn = "fast"\nparameters = 3\n'
                   'env = "v5"\nsteps = 0\nsource = "me"\n')
    with pytest.raises(InterpRLError, match=r"Peer 1 of .*peers\.toml' needs 'return' \(number\); got 'fast'\."):
        load_peers(bad)
    bad.write_text("[[peers]\n")
    with pytest.raises(InterpRLError, match="is not valid TOML"):
        load_peers(bad)


def test_frontier_best_within_and_verdicts_against_hand_worked_answers() -> None:
    recs = ([_rec("HC-SAC", "moe-rl", s, 960, [7400.0 + 10 * s] * 2, [7400.0] * 99 + [100.0]) for s in range(3)]
            + [_rec("HC-PPO", "linear-ars", s, 102, [5200.0, 5300.0], [5200.0] * 97 + [10.0] * 3) for s in range(3)]
            + [_rec("HC-SAC", "moe-sac-1m", 0, 1008, [9000.0], [9000.0] * 100)])  # one seed: drawn, not counted
    points = our_points(summarise(recs, reps=50))["HalfCheetah"]
    front = frontier(points)
    assert [(p.method, p.parameters) for p in front] == [("linear-ars", 102), ("moe-rl", 960)]
    assert best_within(points, 32) is None
    assert best_within(points, 128).method == "linear-ars" and best_within(points, 2000).method == "moe-rl"
    peers = [Peer("HalfCheetah", "SMoSE", "SMoSE", 7310.0, 1000, "v4", 1_000_000, "paper"),
             Peer("HalfCheetah", "ARS linear", "ARS", 5138.0, 102, "v5", 12_544_000, "zoo")]
    word, margin, failed = verdict(best_within(points, 1000), peer_within(peers, "HalfCheetah", 1000))
    # 7,410 mean against 7,310: +1.4%; 3 of 300 episodes below 3,655 (half the peer's): exactly 1%
    assert (word, margin, failed) == ("**ahead**", "+1.4%", "1.0% (3 of 300)")
    word, margin, failed = verdict(best_within(points, 128), peer_within(peers, "HalfCheetah", 128))
    # 5,250 against 5,138: ahead on the mean, but 9 of 300 below 2,569 is 3%
    assert word.startswith("ahead on the mean, but 3.0% of episodes below half") and margin == "+2.2%"
    assert verdict(None, peers[0])[0] == "no controller of ours (the peer stands)"
    # a cost (negative peer): half is 1.5 times it; -4 against -5.49 is ahead by 27.1%
    cost = [_rec("R", "moe", s, 300, [-4.0], [-4.0] * 98 + [-9.0] * 2, task="Reacher-v5") for s in range(3)]
    pts = our_points(summarise(cost, reps=50))["Reacher"]
    assert verdict(best_within(pts, 1000), Peer("Reacher", "SMoSE", "S", -5.49, 1000, "v4", 0, "p")) == (
        "ahead on the mean, but 2.0% of episodes below half (limit 1%)", "+27.1%", "2.0% (6 of 300)")


def test_the_peers_section_plots_each_task_and_tables_every_budget(tmp_path: Path) -> None:
    recs = [_rec("HC-SAC", "moe-rl", s, 960, [7000.0], [7000.0] * 100) for s in range(3)]
    recs += [_rec("IP-SAC", "tree", s, 10, [1000.0], task="InvertedPendulum-v5") for s in range(3)]  # no peer
    images: dict[str, bytes] = {}
    doc = Document()
    ctx = ReportContext(tmp_path, {"episodes": 20}, recs, {}, summarise(recs, reps=50), 50, 0,
                        lambda name, data, alt: images.update({name: data}))
    ANALYSES["peers"](ctx, doc)
    md = doc.markdown()
    assert list(images) == ["peers-HalfCheetah.png"] and images["peers-HalfCheetah.png"][:4] == b"\x89PNG"
    rows = [line for line in md.splitlines() if line.startswith("| HalfCheetah | ≤ ")]
    assert len(rows) == len(BUDGETS)
    made = [line for line in md.splitlines() if line.startswith("| HalfCheetah | moe-rl 8 (HC-SAC) |")]
    assert made == ["| HalfCheetah | moe-rl 8 (HC-SAC) | 3 | 10–12 | 2 | `interp-rl bench --suite smose --out "
                    "benchmarks/results/smose --methods moe-rl --only-teachers HC-SAC --seeds 0,1,2` |"]
    assert re.search(r"\| HalfCheetah \| ≤ 1,000 \| moe-rl 8 \(HC-SAC, 10000\) \| 960 \| 7000\.0 \[7000, 7000, 7000\] "
                     r"\| 7000\.0 \| 0\.0% \(0 of 300\) \| SMoSE .*: 7310 \(1000 params, -v4\) \| behind \| -4\.2% "
                     r"\| -v5 / -v4 \|", md)
    assert "InvertedPendulum" not in md


def test_a_suite_method_can_run_on_some_of_its_teachers_only(tmp_path: Path) -> None:
    frontier_suite = load_suite("frontier")
    assert [c.id for c in frontier_suite.cells(seeds=[0])] == [
        "HalfCheetah-SAC__ars-12m-17__seed0", "Hopper-SAC__ars-7m-11__seed0", "Hopper-SAC__linear-16__seed0",
        "Hopper-SAC__linear-ars-7m-16__seed0", "Hopper-SAC__cmaes-7m-11__seed0", "Swimmer-SAC__ars-2m-8__seed0",
        "Swimmer-SAC__linear-16__seed0", "Swimmer-SAC__linear-ars-2m-16__seed0", "Swimmer-SAC__cmaes-2m-8__seed0"]
    smose = load_suite("smose")
    assert smose.cells(methods=["moe-sac-1m"], seeds=[0]) == [Cell("HalfCheetah-SAC", "moe-sac-1m", 8, 0),
                                                              Cell("Walker2d-SAC", "moe-sac-1m", 8, 0)]
    bad = tmp_path / "bad.toml"
    bad.write_text('seeds = [0]\n[[teachers]]\nname = "a"\npath = "x.zip"\n[methods.tree]\nsizes = [4]\n'
                   'teachers = ["b"]\n')
    with pytest.raises(SuiteError, match=re.escape("[methods.tree] 'teachers' must list some of the suite's teachers "
                                                   "(a). Got ['b'] instead.")):
        load_suite(bad)
