"""What the stand-alone studies (``python -m benchmarks.X``) share: records as JSON, a report with its figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["finish_report", "write_json"]


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write one record atomically, making its folder."""
    from interp_rl.io import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1) + "\n")


def finish_report(out: Path, fig: Any, figure: str, alt: str, lines: list[str]) -> Path:
    """Save ``fig`` as ``out/figure`` (PNG) and ``out/report.md`` (``lines`` and the figure), atomically."""
    import matplotlib.pyplot as plt

    from interp_rl.io import atomic_write, atomic_write_text

    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / figure, lambda tmp: fig.savefig(tmp, format="png", dpi=100))
    plt.close(fig)
    atomic_write_text(out / "report.md", "\n".join([*lines, f"![{alt}]({figure})", ""]) + "\n")
    print(f"wrote {out / 'report.md'}")
    return out / "report.md"
