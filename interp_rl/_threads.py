"""Run torch on a fixed number of CPU threads inside a block, then give the caller's setting back.

The floating-point result of a network depends on how its sums are split across threads, and a
MuJoCo rollout amplifies the last bit; a fixed count keeps results identical from run to run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run torch on ``n`` CPU threads inside the block, then restore the setting."""
    import torch

    before = torch.get_num_threads()
    if before != n:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if before != n:
            torch.set_num_threads(before)
