"""Things defined once: every stage's episode seeds (:mod:`interp_rl.seeds`, no two of one run alike) and the update
of augmented random search (:func:`distill.ars.ars_update`, which every ARS here makes)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from interp_rl import seeds

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("interp_rl", "distill", "envs", "benchmarks")
SEED_NAME = re.compile(r"SEED(_OFFSET|_STRIDE)?$")


def test_seed_offsets_are_assigned_only_in_interp_rl_seeds() -> None:
    found = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "interp_rl" / "seeds.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, ast.AnnAssign) else [])
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {t.id}" for t in targets
                          if isinstance(t, ast.Name) and SEED_NAME.search(t.id)]
    assert found == [], f"seed offsets defined outside interp_rl/seeds.py: {found}"


def test_one_distillations_offsets_are_distinct_and_the_table_names_each() -> None:
    run = ("SELECTION_SEED_OFFSET", "SWEEP_SEED_OFFSET", "TUNING_SEED_OFFSET", "RL_SEED_OFFSET", "FAILURE_SEED_OFFSET",
           "REPAIR_SEED_OFFSET", "REPAIR_SELECTION_SEED_OFFSET", "RESTART_SEED_OFFSET", "RL_LEVELS_SEED_OFFSET",
           "DIAGNOSE_SEED")
    values = [getattr(seeds, name) for name in run]
    assert len(set(values)) == len(values), dict(zip(run, values, strict=True))
    for name in seeds.__all__:
        assert f"``{name}``" in seeds.__doc__, f"{name} is missing from the table in interp_rl/seeds.py"


def test_every_ars_update_is_ars_update() -> None:
    """ARS on a program's parameters and leaf tuning on a tree's leaves both step through ``ars_update``; no module
    ranks directions by ``max(r+, r-)`` on its own."""
    import numpy as np

    from distill.ars import ars_update

    own = [f"{path.relative_to(ROOT)}" for package in PACKAGES for path in (ROOT / package).rglob("*.py")
           if "argsort(-np.maximum(" in path.read_text()
           and path != ROOT / "distill" / "ars.py"]
    assert own == [], f"an ARS update of its own in {own}"
    for module in ("distill/ars.py", "distill/leaf_search.py"):
        assert "ars_update(" in (ROOT / module).read_text(), module
    # the update itself: the best direction by max(r+, r-), scaled by the spread of the returns it used
    theta, sigma = ars_update(np.zeros(3), np.array([1.0, 5.0, 2.0]), np.array([2.0, 1.0, 2.0]), np.eye(3), 0.1, 2)
    used = np.array([5.0, 1.0, 1.0, 2.0])  # directions 1 (5), then 0 (the tie at 2 goes in direction order)
    assert sigma == used.std()
    np.testing.assert_allclose(theta, 0.1 / (2 * used.std()) * np.array([-1.0, 4.0, 0.0]))
