"""Process-level helpers for bulk work: pausing the cyclic garbage collector, whether
to fork a second process, and forking one that never collects the parent's garbage."""

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
    repeated full scans cost more than the parsing itself (docs/benchmarks.md)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
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
def no_collection() -> Iterator[bool]:
    """The cyclic collector off for the time of the `with`, and in a child forked inside
    it (see `settle_child`); gives whether it was on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield enabled
    finally:
        if enabled:
            gc.enable()


def settle_child(collect: bool) -> None:
    """First thing in a child forked inside `no_collection`: what it inherited goes to
    the collector's permanent generation, so it never collects (finalises) the parent's
    objects; then the collector is on again if it was in the parent (`collect`).

    A child that collected the parent's unreachable cycles would run their finalizers a
    second time, in a process without the parent's threads: an open DuckDB connection
    in such a cycle crashes the child (SIGSEGV in the collector; it happened once in a
    worker of the parallel log reader). Freezing in the child also leaves the parent's
    pages unwritten and shared, and leaves the parent's own collector as it was."""
    gc.freeze()
    if collect:
        gc.enable()


def fork() -> int:
    """`os.fork()`, with a child that never collects the parent's objects
    (`settle_child`)."""
    with no_collection() as enabled:
        pid = os.fork()
        if pid == 0:
            settle_child(enabled)
    return pid
