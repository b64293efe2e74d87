"""Run torch (and NumPy's BLAS) on a fixed number of CPU threads, then give the caller's setting back.

The floating-point result of a network or a matrix product depends on how its sums are split across
threads, and a MuJoCo rollout amplifies the last bit; a fixed count keeps results identical from run
to run and from machine to machine.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["one_blas_thread", "torch_threads"]

F = TypeVar("F", bound=Callable[..., Any])


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


def one_blas_thread(func: F) -> F:
    """Run ``func`` with NumPy's BLAS on one thread (``threadpoolctl``), then restore the setting."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
