"""Process-level helpers for bulk work: pausing the cyclic garbage collector, whether
to fork a second process, and forking it so that it never collects the parent's
garbage."""

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


@contextmanager
def frozen_for_fork() -> Iterator[None]:
    """Around a fork: what this process holds is moved to the garbage collector's
    permanent generation, so a child never collects (finalises) the parent's objects.

    A child that collected the parent's unreachable cycles would run their finalizers a
    second time, in a process without the parent's threads: an open DuckDB connection
    in such a cycle crashes the child (SIGSEGV in the collector, seen once in a worker of
    the parallel log reader). It also leaves the parent's pages unwritten and shared, as
    the gc module's documentation advises for fork. The parent unfreezes afterwards
    (unless it had frozen objects of its own, as the review app does); a child's own
    garbage is collected as usual.
    """
    already = gc.get_freeze_count()
    parent = os.getpid()
    gc.freeze()
    try:
        yield
    finally:
        if not already and os.getpid() == parent:
            gc.unfreeze()


def fork() -> int:
    """`os.fork()`, with the parent's objects out of the child's collector's reach
    (`frozen_for_fork`)."""
    with frozen_for_fork():
        return os.fork()
