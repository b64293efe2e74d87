"""interp-rl's top-level packages whose names others use: a clear message when another's files took their place.

``envs`` is also the name of another distribution on PyPI, and any project may ship a ``distill`` or a
``benchmarks`` package. Installed next to interp-rl, such a distribution either shadows ours (it comes first
on ``sys.path``) or overwrites our files (both in ``site-packages``); the imports that follow would then fail
far from the cause. Each of our packages carries ``DISTRIBUTION = "interp-rl"`` in its ``__init__.py``;
:func:`check_own_packages` reads it (without importing the package) and names the culprit.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["MARKER", "OWN_PACKAGES", "check_own_packages"]

#: The top-level packages of the interp-rl distribution besides ``interp_rl``.
OWN_PACKAGES = ("envs", "distill", "benchmarks")
#: The line each of their ``__init__.py`` holds.
MARKER = 'DISTRIBUTION = "interp-rl"'


def check_own_packages() -> None:
    """Raise :class:`ImportError` naming the package and the file found when one of :data:`OWN_PACKAGES`
    resolves to another distribution's files."""
    for name in OWN_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        try:
            ours = origin is not None and MARKER in origin.read_text(encoding="utf-8", errors="replace")
        except OSError:
            ours = False
        if not ours and spec is not None and origin is None and spec.submodule_search_locations:
            folder = list(spec.submodule_search_locations)[0]
            raise ImportError(
                f"interp-rl's '{name}' package resolves to the folder '{folder}', which has no __init__.py: a folder "
                f"named '{name}' in the current directory (or another entry of sys.path) hides interp-rl's. Run "
                "from another directory, or rename that folder.")
        if not ours:
            found = f"'{origin}'" if origin is not None else "nothing"
            raise ImportError(
                f"interp-rl's '{name}' package resolves to {found}, which is not interp-rl's: another "
                f"distribution that ships a '{name}' package shadows or overwrote it. Uninstall that one (pip show "
                f"-f names the files of each) and reinstall interp-rl, or install interp-rl in a virtual environment "
                "of its own.")
