"""The package layers point one way (see docs/concepts/architecture.md).

Layers, bottom to top: the core (``interp_rl``), then ``distill`` and ``envs`` side by side,
then ``benchmarks``, then the CLI (``interp_rl.cli``), which nothing imports.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: layer -> the layers it may import (besides itself)
ALLOWED = {
    "interp_rl": set(),
    "distill": {"interp_rl"},
    "envs": {"interp_rl"},
    "benchmarks": {"interp_rl", "distill", "envs"},
    "interp_rl.cli": {"interp_rl", "distill", "envs", "benchmarks"},
}
PACKAGES = ("interp_rl", "distill", "envs", "benchmarks")


def _layer(module: str) -> str | None:
    """The layer of a dotted module name: the longest layer name it starts with."""
    hits = [name for name in ALLOWED if module == name or module.startswith(name + ".")]
    return max(hits, key=len) if hits else None


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Absolute module names imported by ``path`` (``from a import b`` counts ``a`` and ``a.b``)."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _sources() -> list[Path]:
    return [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py") if "results" not in p.parts]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_point_one_way(path: Path) -> None:
    me = _layer(_module_name(path))
    assert me is not None
    for target in _imports(path):
        other = _layer(target)
        if other is None or other == me:
            continue
        assert other in ALLOWED[me], f"{path.relative_to(ROOT)} ({me}) imports {target} ({other})"


def test_nothing_imports_the_cli() -> None:
    users = [str(p.relative_to(ROOT)) for p in _sources() + list((ROOT / "tests").rglob("*.py"))
             if _layer(_module_name(p)) != "interp_rl.cli" and p.parent.name != "tests"
             and any(_layer(t) == "interp_rl.cli" for t in _imports(p))]
    assert users == []


def test_the_layer_test_sees_a_violation(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("from distill import DAgger\nfrom interp_rl.cli import app\nimport interp_rl.viz\n")
    assert {_layer(t) for t in _imports(probe)} == {"distill", "interp_rl.cli", "interp_rl"}
    assert _layer("interp_rl.kinds.tree") == "interp_rl" and _layer("interp_rl.cli") == "interp_rl.cli"
    assert "distill" not in ALLOWED["interp_rl"] and "interp_rl.cli" not in ALLOWED["benchmarks"]
