"""The README's table of headline results, generated from the ``recipe`` suite's committed records.

``python -m benchmarks.headline`` (from the repository's root) rewrites the table between the README's markers;
the tests check that the README holds what the records give, so no percentage there is copied by hand.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from benchmarks.harness import load_records
from benchmarks.records import summarise
from interp_rl.document import Document

__all__ = ["BEGIN", "END", "headline_table", "update_readme"]

BEGIN = "<!-- headline: python -m benchmarks.headline writes this table from the records; do not edit -->"
END = "<!-- /headline -->"
#: Where the suite's records are, relative to the repository's root.
RECIPE = Path("benchmarks") / "results" / "recipe"


def headline_table(results: str | Path = RECIPE, method: str = "moe") -> str:
    """Per teacher of the suite in ``results``: ``method``'s mean % of the teacher over the seeds, the worst
    episode, the episodes below half the teacher's mean and the non-zero parameters, as a Markdown table."""
    res = Path(results)
    suite = json.loads((res / "suite.json").read_text())
    held_out = {t["name"] for t in suite.get("teachers") or [] if t.get("held_out")}
    rows = []
    own = [r for r in load_records(res) if r["method"] == method and r.get("suite") == suite["name"]]
    for teacher, groups in summarise(own, reps=200).items():
        for g in groups:
            flags = sum(len((r.get("failures") or {}).get("returns") or []) for r in g.records)
            below = round(g.below_half * flags / 100) if flags else 0
            name = teacher + (" (held out)" if teacher in held_out else "")
            seeds = sorted(int(r["cell"]["seed"]) for r in g.records)
            rows.append([name, f"{g.mean_percent:.1f}", f"{g.worst_percent:.1f}", f"{below} of {flags}",
                         f"{g.mean('size', 'parameters'):.0f}", ", ".join(map(str, seeds))])
    doc = Document()
    doc.table(["teacher", "% of teacher (mean of seeds)", "worst episode", "episodes below half", "parameters",
               "seeds"], rows)
    return doc.markdown().rstrip("\n")


def update_readme(readme: str | Path = "README.md", **kw: str | Path) -> bool:
    """Put :func:`headline_table` between the README's markers; True when the README changed."""
    path = Path(readme)
    text = path.read_text()
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?\n" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no headline markers ({BEGIN} ... {END}).")
    new = pattern.sub(lambda _: f"{BEGIN}\n{headline_table(**kw)}\n{END}", text)
    if new != text:
        path.write_text(new)
    return new != text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readme", type=Path, default=Path("README.md"))
    parser.add_argument("--results", type=Path, default=RECIPE, help="the recipe suite's results folder")
    args = parser.parse_args()
    print("README updated." if update_readme(args.readme, results=args.results) else "README already up to date.")


if __name__ == "__main__":
    main()
