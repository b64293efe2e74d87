"""Atomic file output: write to a temporary file beside the target, then rename."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text", "check_folder", "json_safe",
           "remove_stale_temps"]


def atomic_write(path: str | os.PathLike[str], writer: Callable[[str], None]) -> Path:
    """Call ``writer(tmp_path)`` then rename ``tmp_path`` onto ``path``.

    A crash at any point leaves either the old file or the new one, never half
    of one.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600 files; give the usual permissions
    try:
        writer(tmp)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def check_folder(path: str | os.PathLike[str], name: str = "--out") -> Path:
    """``path`` as a folder to write into: an existing folder or a path that can become one.

    Raises :class:`~interp_rl.errors.InterpRLError`, one line naming ``name`` and the path as given,
    when ``path`` or a folder above it is a file.

    >>> import tempfile
    >>> f = tempfile.NamedTemporaryFile(suffix=".txt")
    >>> check_folder(f.name + "/sub")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    interp_rl.errors.InterpRLError: --out '...txt/sub' lies inside '...txt', which is a file; name a folder.
    """
    from interp_rl.errors import InterpRLError

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise InterpRLError(f"{name} {str(path)!r} is a file; name a folder (made if missing).")
    for above in target.parents:
        if above.exists():
            if not above.is_dir():
                raise InterpRLError(f"{name} {str(path)!r} lies inside {str(above)!r}, which is a file; "
                                    "name a folder.")
            break
    return target


def remove_stale_temps(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files a killed :func:`atomic_write` left below ``folder``; return them.

    A process killed outright (SIGKILL, power loss) gets no chance to clean up, so its
    ``.NAME.XXXXXXXX.tmp`` file stays beside the intact target. Call this before resuming
    work in a folder that no other process is writing to.
    """
    root = Path(folder)
    if not root.is_dir():
        return []
    stale = [p for p in root.rglob(".*.tmp*") if p.is_file() and ".tmp" in p.name]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""

    def _write(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    return atomic_write(path, _write)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN/inf replaced by None and NumPy scalars by Python ones, so the JSON is standard.

    >>> import numpy as np
    >>> json_safe({"a": [float("nan"), np.float32(0.5)], "b": (1, float("inf"))})
    {'a': [None, 0.5], 'b': [1, None]}
    """
    if hasattr(obj, "item") and getattr(obj, "shape", None) == ():  # NumPy scalar
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj
