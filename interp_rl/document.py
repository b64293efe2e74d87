"""A report page as blocks, written twice: Markdown with its pictures as files, and one self-contained HTML page.

Benchmark reports (:mod:`benchmarks.report`) and diagnosis pages (:mod:`interp_rl.diagnose`) are built with it::

    doc = Document()
    doc.h(1, "Title")
    doc.table(["teacher", "% of teacher"], [["Hopper-PPO", "98.1"]])
    doc.image("returns.png", png_bytes, "Returns by episode")
    doc.write(folder, "Title")   # report.md, figures/returns.png, report.html (pictures embedded)
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interp_rl.io import atomic_write_bytes, atomic_write_text

__all__ = ["Document", "png", "pyplot"]


@dataclass
class Document:
    """The page as blocks (headings, paragraphs, tables, pictures, preformatted text, bullets).

    Text takes Markdown's `code` and **bold** spans in both renderings.
    """

    figures: str = "figures"
    """Folder (beside ``report.md``) the Markdown's pictures are written to."""
    blocks: list[tuple[str, Any]] = field(default_factory=list)

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", (level, text)))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        self.blocks.append(("table", (header, rows)))

    def image(self, name: str, data: bytes | Callable[[], bytes], alt: str) -> None:
        """A picture (PNG, or SVG when ``name`` ends in ``.svg``) given as bytes, or as a function that draws them
        when the page is written (once; a page only read as text, :meth:`markdown`, never draws it)."""
        self.blocks.append(("image", (name, data, alt)))

    def pre(self, text: str) -> None:
        self.blocks.append(("pre", text))

    def bullets(self, items: list[str]) -> None:
        self.blocks.append(("ul", items))

    def images(self) -> dict[str, bytes]:
        """The pictures by file name, those given as functions drawn now (once)."""
        for i, (kind, v) in enumerate(self.blocks):
            if kind == "image" and callable(v[1]):
                self.blocks[i] = ("image", (v[0], v[1](), v[2]))
        return {v[0]: v[1] for kind, v in self.blocks if kind == "image"}

    def image_names(self) -> list[str]:
        """The pictures' file names, in page order, without drawing any."""
        return [v[0] for kind, v in self.blocks if kind == "image"]

    def markdown(self) -> str:
        lines: list[str] = []
        for kind, v in self.blocks:
            if kind == "h":
                lines += [f"{'#' * v[0]} {v[1]}", ""]
            elif kind == "p":
                lines += [v, ""]
            elif kind == "table":
                header, rows = v
                lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
                lines.append("")
            elif kind == "image":
                lines += [f"![{v[2]}]({self.figures}/{v[0]})", ""]
            elif kind == "pre":
                lines += ["```", v, "```", ""]
            elif kind == "ul":
                lines += [f"- {item}" for item in v] + [""]
        return "\n".join(lines).rstrip() + "\n"

    def html(self, title: str) -> str:
        e = html.escape
        self.images()  # every picture drawn
        body: list[str] = []
        for kind, v in self.blocks:
            if kind == "h":
                body.append(f"<h{v[0]}>{_inline(v[1])}</h{v[0]}>")
            elif kind == "p":
                body.append(f"<p>{_inline(v)}</p>")
            elif kind == "table":
                header, rows = v
                body.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in header)
                            + "</tr></thead><tbody>"
                            + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in row) + "</tr>"
                                      for row in rows) + "</tbody></table>")
            elif kind == "image":
                name, data, alt = v
                mime = "image/svg+xml" if name.endswith(".svg") else "image/png"
                src = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
                body.append(f'<figure><img src="{src}" alt="{e(alt)}">'
                            f'<figcaption>{e(alt)}</figcaption></figure>')
            elif kind == "pre":
                body.append(f"<pre>{e(v)}</pre>")
            elif kind == "ul":
                body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in v) + "</ul>")
        return _HTML.format(title=e(title), body="\n".join(body))

    def write(self, folder: str | Path, title: str, *, stem: str = "report", prune: bool = False) -> dict[str, Path]:
        """Write ``STEM.md`` with its pictures in ``figures/``, and the self-contained ``STEM.html``, atomically.

        ``prune``: the pictures folder is this page's alone, so files an earlier version of it showed are removed.
        """
        dest = Path(folder)
        images = self.images()
        for name, data in images.items():
            atomic_write_bytes(dest / self.figures / name, data)
        if prune:
            for stale in sorted((dest / self.figures).glob("*")):
                if stale.is_file() and stale.name not in images:
                    stale.unlink()
        return {"markdown": atomic_write_text(dest / f"{stem}.md", self.markdown()),
                "html": atomic_write_text(dest / f"{stem}.html", self.html(title))}


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def png(fig: Any, dpi: int = 110) -> bytes:
    """A figure as PNG bytes (for :meth:`Document.image`); the figure is closed."""
    import io

    plt = pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


def _inline(text: str) -> str:
    """Escape, then turn Markdown `code` and **bold** spans into HTML."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 1150px; margin: 2em auto; padding: 0 1em;
       color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.2em; font-size: 0.86em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; }}
th {{ background: #f2f2f2; }} td:first-child, th:first-child {{ text-align: left; }}
pre {{ background: #f7f7f7; padding: 0.7em; overflow-x: auto; font-size: 0.8em; }}
figure {{ margin: 1em 0; }} figure img {{ max-width: 100%; border: 1px solid #eee; }}
figcaption {{ font-size: 0.85em; color: #555; }}
code {{ background: #f2f2f2; padding: 0 0.2em; }}
</style></head>
<body>
{body}
</body></html>
"""
