"""A griffe extension for the docs build: doctest blocks outside an ``Examples`` section are shown as code.

Our docstrings run their examples as doctests wherever they read best; numpydoc renders only the ``Examples``
section as code, so elsewhere ``>>> x["key"]`` would be read as Markdown (a link reference). This wraps each
doctest block (``>>>`` lines, their ``...`` continuations and the output up to a blank line) in a fenced
``pycon`` block, in the docstring as the site shows it; the source is untouched.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with every doctest block outside an ``Examples`` section fenced.

    >>> print(fence_doctests('Intro.\\n\\n>>> 1 + 1\\n2\\n\\nMore.'))
    Intro.
    <BLANKLINE>
    ```pycon
    >>> 1 + 1
    2
    ```
    <BLANKLINE>
    More.
    """
    out: list[str] = []
    lines = text.splitlines()
    i, in_examples, fenced = 0, False, False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        heading = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"} and stripped
        if heading:
            in_examples = stripped == "Examples"
        if stripped.startswith(">>>") and not in_examples and not fenced:
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].strip())
                i += 1
            out += [indent + "```pycon", *(indent + b for b in block), indent + "```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    """Fence the doctest blocks of every docstring griffe loads (see the module docstring)."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
