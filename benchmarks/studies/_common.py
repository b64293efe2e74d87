"""What the studies share: the ``--out`` and ``--teachers`` options, the JSON records and the report.

A study runs from the repository's root. Its records and its report go to ``--out`` (a folder relative to the
current directory, ``benchmarks/results/NAME`` by default), and its ``report`` part rebuilds the report from
those records alone::

    parser = argparse.ArgumentParser()
    parts = parser.add_subparsers(dest="part", required=True)
    add_out(parts.add_parser("report"), "benchmarks/results/NAME")
    args = parse(parser, argv)                       # --out a file: one line on stderr, exit status 1
    write_json(args.out / "record.json", record)
    doc = new_report("Title", "NAME", ["python -m benchmarks.studies.NAME run"])
    doc.table(["seed", "return"], [["0", "1000.0"]])
    write_report(doc, args.out)                      # report.md, figures/, report.html
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from interp_rl.document import Document

__all__ = ["add_out", "add_teachers", "new_report", "parse", "read_json", "write_json", "write_report"]


def add_out(parser: argparse.ArgumentParser, default: str) -> None:
    """Add ``--out FOLDER``, where the study writes its records and its report.

    Parameters
    ----------
    parser
        The parser (or a part's subparser) to add the option to.
    default
        The study's folder, relative to the current directory (``benchmarks/results/NAME``).
    """
    parser.add_argument("--out", type=Path, default=Path(default),
                        help=f"folder of the records and the report (default: {default})")


def add_teachers(parser: argparse.ArgumentParser) -> None:
    """Add ``--teachers FOLDER``, the shared teachers (default :func:`benchmarks.harness.default_teachers_dir`).

    Parameters
    ----------
    parser
        The parser (or a part's subparser) to add the option to.
    """
    from benchmarks.harness import default_teachers_dir

    parser.add_argument("--teachers", type=Path, default=default_teachers_dir(),
                        help="folder of the shared teachers (default: $INTERP_RL_TEACHERS, else ../shared/teachers)")


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse ``argv`` and check that ``--out`` can be a folder.

    Parameters
    ----------
    parser
        The study's parser.
    argv
        The arguments (None: the command line's).

    Returns
    -------
    argparse.Namespace
        The parsed arguments.

    Raises
    ------
    SystemExit
        With one line naming the path, when ``--out`` or a folder above it is a file.
    """
    from interp_rl.errors import InterpRLError
    from interp_rl.io import check_folder

    args = parser.parse_args(argv)
    try:
        check_folder(args.out)
    except InterpRLError as err:
        raise SystemExit(f"Error: {err}") from None
    return args


def write_json(path: Path, data: Any) -> Path:
    """Write one record as standard JSON (NaN as null), atomically, making its folder.

    Parameters
    ----------
    path
        The record's file.
    data
        What it holds: dicts, lists, numbers and strings (NumPy scalars too).

    Returns
    -------
    Path
        ``path``.
    """
    from interp_rl.io import atomic_write_text, json_safe

    atomic_write_text(path, json.dumps(json_safe(data), indent=1) + "\n")
    print(f"wrote {path}")
    return path


def read_json(path: Path) -> Any:
    """A record written by :func:`write_json` (or any JSON file).

    Parameters
    ----------
    path
        The record's file.

    Returns
    -------
    Any
        Its content.
    """
    return json.loads(Path(path).read_text())


def new_report(title: str, study: str, commands: list[str]) -> Document:
    """A report that starts with its title and the commands that regenerate it.

    Parameters
    ----------
    title
        The report's title (its first heading).
    study
        The study's module name under ``benchmarks.studies``, for the ``report`` command.
    commands
        The commands that regenerate the records, run from the repository's root.

    Returns
    -------
    Document
        The page so far; the study adds its sections, then calls :func:`write_report`.
    """
    doc = Document()
    doc.h(1, title)
    doc.p("Regenerate the records, from the repository's root:")
    doc.pre("\n".join(commands))
    doc.p(f"Rebuild this report from the records alone (no teacher, no training): "
          f"`python -m benchmarks.studies.{study} report`.")
    return doc


def write_report(doc: Document, out: Path) -> Path:
    """Write ``report.md`` with its pictures in ``figures/``, and the self-contained ``report.html``, in ``out``.

    Parameters
    ----------
    doc
        The report, from :func:`new_report` (its first heading is the HTML page's title).
    out
        The study's folder.

    Returns
    -------
    Path
        The ``report.md`` written.
    """
    title = next(v[1] for kind, v in doc.blocks if kind == "h")
    path = doc.write(out, title, prune=True)["markdown"]
    print(f"wrote {path}")
    return path
