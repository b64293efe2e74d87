"""Where a result came from: package versions and the machine, recorded beside every result."""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version

__all__ = ["PACKAGES", "machine", "versions"]

#: Packages whose versions decide a result.
PACKAGES = ("interp-rl", "stable-baselines3", "sb3-contrib", "gymnasium", "mujoco", "torch", "numpy",
            "scikit-learn", "scipy", "pysindy", "shap")


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``packages`` (missing ones left out), and Python's.

    >>> "python" in versions(("numpy",)) and "numpy" in versions(("numpy",))
    True
    """
    found = {"python": platform.python_version()}
    for pkg in packages:
        try:
            found[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return found


def machine() -> dict[str, str | int]:
    """The machine a result was measured on: processor, core count, operating system."""
    return {"processor": platform.processor() or platform.machine(), "cpus": os.cpu_count() or 0,
            "system": f"{platform.system()} {platform.release()}"}
