"""The documentation site builds offline with warnings as errors, and its reference covers the whole surface."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


#: The tests of the built site share a worker (``--dist loadgroup``), so it is built once.
ON_THE_SITE = pytest.mark.xdist_group("docs-site")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(out)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]  # strict: a warning (a broken link, a bad docstring) fails
    return out


@ON_THE_SITE
def test_every_command_has_its_help_in_the_reference(site: Path) -> None:
    from typer.testing import CliRunner

    from interp_rl.cli import app

    page = (site / "reference" / "cli.html").read_text()
    runner = CliRunner()
    commands = ["train", "evaluate", "viz", "explain", "export", "diagnose", "bench", "report", "demo",
                "envs show", "dynamics fit", "dynamics evaluate", "dynamics train"]
    from distill.methods import METHODS

    commands += [f"distill {name}" for name in METHODS]
    for words in commands:
        assert f"<code>interp-rl {words}</code>" in page, words
        first = runner.invoke(app, [*words.split(), "--help"], terminal_width=100).stdout.splitlines()[2]
        assert first.strip().split(" ")[0] in page


def _public_modules(package: str) -> list[str]:
    import pkgutil

    names = [package]
    for info in pkgutil.walk_packages([str(ROOT / package)], prefix=package + "."):
        parts = info.name.split(".")
        if not any(p.startswith("_") for p in parts[1:]) and "results" not in parts:
            names.append(info.name)
    return names


@pytest.mark.parametrize("package", ["interp_rl", "distill", "envs", "benchmarks"])
@ON_THE_SITE
def test_every_public_class_and_function_is_in_the_api_reference(site: Path, package: str) -> None:
    import inspect

    page = (site / "reference" / f"api-{package}.html").read_text()
    checked = 0
    for name in _public_modules(package):
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == name:
                assert f'id="{name}.{attr}"' in page, f"{name}.{attr}"
                checked += 1
    assert checked >= 5


@ON_THE_SITE
def test_the_benchmark_pages_are_the_committed_reports(site: Path) -> None:
    for suite in ("recipe", "smose", "sindy"):
        html = (site / "results" / suite / "report.html").read_text()
        md = (ROOT / "benchmarks" / "results" / suite / "report.md").read_text()
        title = md.splitlines()[0].lstrip("# ")
        assert title in html
        for fig in (ROOT / "benchmarks" / "results" / suite / "figures").glob("*.png"):
            assert (site / "results" / suite / "figures" / fig.name).read_bytes() == fig.read_bytes()


def test_the_readme_is_a_front_door_and_its_figures_come_from_the_records() -> None:
    from benchmarks.headline import BEGIN, END, RECIPE, headline_table

    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    block = readme.split(BEGIN + "\n", 1)[1].split("\n" + END, 1)[0]
    assert block == headline_table(ROOT / RECIPE)  # python -m benchmarks.headline rewrites it when the records change
