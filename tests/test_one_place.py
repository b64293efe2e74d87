"""Every stage's episode seeds are defined in one place, :mod:`interp_rl.seeds`, and no two coincide."""

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
