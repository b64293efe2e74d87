"""Pages generated at build time (mkdocs-gen-files): nothing here is copied by hand.

- ``reference/cli.md``: every ``interp-rl`` command's ``--help``, from the command line itself;
- ``reference/api-PACKAGE.md``: every public module of each package, from its numpydoc docstrings;
- ``results/*.md``: the committed benchmark reports, as ``interp-rl report`` wrote them from their records, with
  their figures, and the reports of the stand-alone studies (``python -m benchmarks.studies.NAME report``).
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("interp_rl", "distill", "envs", "benchmarks")
#: Suites whose committed reports the site shows, with a line on each.
RESULTS = {
    "recipe": "the default recipe of `distill moe` on every shared teacher and on agents it was not chosen on",
    "smose": "mixtures of linear experts, trees and linear policies, distilled and fine-tuned (SMOSE)",
    "sindy": "SINDy equations against trees of as many parameters",
    "mujoco": "trees, linear policies and SINDy equations at several sizes on the shared MuJoCo teachers",
    "silver": "SILVER's argmax rules on discrete teachers (CartPole, MountainCar) against trees",
    "sensors": "how many features a controller needs: the teacher's top-k by Shapley value against k at random",
    "verify": "64-leaf trees of the Hopper and HalfCheetah teachers verified against the committed domain rules",
}
#: Stand-alone studies (``benchmarks/studies``) whose committed reports the site shows: folder -> a line on each.
STUDIES = {
    "teachers": "the shared teachers' returns on the -v5 tasks, reproduced here",
    "train_budget": "the steps `interp-rl train` needs to balance InvertedPendulum",
    "attribution": "Shapley attribution against exact values and shap's explainers: accuracy and speed",
    "dyna": "the Dyna loop on a SINDy surrogate against model-free SAC, in real steps",
    "verification": "the benchmark's trees and mixtures checked against domain rules, and repaired",
    "ars": "augmented random search in the linear class: from scratch against the zoo, workers, a Ray cluster, imports",
    "udrl": "upside-down RL with tree ensembles against DQN and PPO at the same environment steps",
}


def _commands() -> list[tuple[list[str], str]]:
    """``(words, help text)`` of every command, groups first, in the order ``interp-rl --help`` lists them."""
    import typer
    from typer.testing import CliRunner

    from interp_rl.cli import app

    runner, found, todo = CliRunner(), [], [([], typer.main.get_command(app))]
    while todo:
        words, command = todo.pop(0)
        text = runner.invoke(app, [*words, "--help"], prog_name="interp-rl", terminal_width=100).stdout
        found.append((words, text.rstrip()))
        subs = getattr(command, "commands", None) or {}
        todo += [([*words, name], sub) for name, sub in subs.items()]
    return found


def cli_page() -> str:
    lines = ["# Command line", "", "Every command's `--help`, as `interp-rl` prints it.", ""]
    for words, text in _commands():
        lines += [f"## `interp-rl{''.join(' ' + w for w in words)}`", "", "```text", text, "```", ""]
    return "\n".join(lines)


def _modules(package: str) -> list[str]:
    """The package and its public modules (no ``_private`` part, no ``__main__``), sorted."""
    root = ROOT / package
    names = [package]
    for info in pkgutil.walk_packages([str(root)], prefix=package + "."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]) or "results" in parts:
            continue
        names.append(info.name)
    return sorted(names)


def api_page(package: str) -> str:
    lines = [f"# `{package}`", ""]
    for name in _modules(package):
        lines += [f"::: {name}", ""]
    return "\n".join(lines)


def _copy_report(name: str) -> bool:
    """Copy ``benchmarks/results/NAME/report.md`` and its figures to ``results/NAME/``; False if there is none."""
    folder = ROOT / "benchmarks" / "results" / name
    report = folder / "report.md"
    if not report.is_file():
        return False
    with mkdocs_gen_files.open(f"results/{name}/report.md", "w") as fh:
        fh.write(report.read_text())
    for fig in sorted((folder / "figures").glob("*")):
        with mkdocs_gen_files.open(f"results/{name}/figures/{fig.name}", "wb") as fh:
            fh.write(fig.read_bytes())
    return True


def results_pages() -> None:
    index = ["# Benchmark results", "",
             "The committed reports of the benchmark suites, as `interp-rl report RESULTS` writes them from the "
             "records in `benchmarks/results/SUITE/records/` (the command that regenerates each is on its page).", ""]
    index += [f"- [{suite}]({suite}/report.md): {what}." for suite, what in RESULTS.items() if _copy_report(suite)]
    index += ["", "The stand-alone studies, each rebuilt from its records in `benchmarks/results/NAME/` by "
              "`python -m benchmarks.studies.STUDY report` (the commands are on its page):", ""]
    index += [f"- [{name}]({name}/report.md): {what}." for name, what in STUDIES.items() if _copy_report(name)]
    with mkdocs_gen_files.open("results/index.md", "w") as fh:
        fh.write("\n".join(index) + "\n")


with mkdocs_gen_files.open("reference/cli.md", "w") as fh:
    fh.write(cli_page())
for pkg in PACKAGES:
    with mkdocs_gen_files.open(f"reference/api-{pkg}.md", "w") as fh:
        fh.write(api_page(pkg))
with mkdocs_gen_files.open("reference/api.md", "w") as fh:
    fh.write("# Python API\n\nFrom the numpydoc docstrings, one page per package:\n\n"
             + "".join(f"- [`{p}`](api-{p}.md)\n" for p in PACKAGES))
results_pages()
