"""Pausing the cyclic garbage collector while bulk records are made."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while making many records that hold no cycles
    (question-set lines, run files, log queries): at 200k lines or a 1M-line run its
    repeated full scans cost more than the parsing itself (docs/benchmarks.md)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
