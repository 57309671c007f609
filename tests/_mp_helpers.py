"""Module-level functions for the ember.multiprocessing tests (spawned children import them)."""

from __future__ import annotations

import os
import sys


def write_square(i: int, out_dir: str, value) -> None:
    """Write (i, value * value) as an ember checkpoint: the parent reads what the child did."""
    import ember
    ember.save({"i": i, "square": value * value}, os.path.join(out_dir, f"{i}.pt"))


def raise_on_one(i: int) -> None:
    if i == 1:
        raise ValueError(f"child {i} failed on purpose")


def exit_with_code(i: int, code: int) -> None:
    sys.exit(code)


def put_sum(i: int, queue, tensor) -> None:
    queue.put((i, tensor.sum()))
