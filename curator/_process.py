"""Process-level helpers for bulk work: pausing the cyclic garbage collector, and
whether to fork a second process."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while making many records that hold no cycles
    (question-set lines, run files, log queries): at 200k lines or a 1M-line run its
    repeated full scans cost more than the parsing itself (docs/export.md).

    Afterwards what was made meanwhile is handed to the oldest generation; left in the
    youngest, the next allocation would scan all of it once (0.1 s after a 1M-line run).
    A process that froze its own objects (the review app, after startup) keeps them frozen.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def can_fork() -> bool:
    """Whether a forked helper process would pay: `fork` exists, this process may run
    on a second core, and no other thread is running (a lock one of them held would
    stay held forever in the child)."""
    return (
        hasattr(os, "fork")
        and hasattr(os, "sched_getaffinity")
        and len(os.sched_getaffinity(0)) > 1
        and threading.active_count() == 1
    )
