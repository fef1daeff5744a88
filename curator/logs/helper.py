"""A second process for the per-query work of a big import.

After DuckDB's pass, an import works once per distinct query in Python: redaction (a
scan of every query) and clustering run on one core while the other idles, 1.7 s for
the 5M-line benchmark's 184k queries. Part of that work is handed to a helper forked
when the import starts, while the process still has one thread (`can_fork`: a lock
another thread held would stay held in the child). The parts are exact splits:
half the queries for redaction (each query on its own; not where DuckDB's read-back
screened them, which leaves little to share), and the queries with digits
for clustering (a query with digits is never compared with one without: see
cluster.py). The helper gets its inputs and sends its results through a pipe.

A task the helper cannot take or does not finish (the pipe broke, it failed) is worked
out here instead: the helper only ever makes an import faster.
"""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, NoReturn

from curator._process import can_fork, fork


class Helper:
    """The parent's end: `run(fn, *args)` starts `fn(*args)` in the helper and returns
    what gives its result. `fn` must be a module-level function (it is pickled by name)."""

    def __init__(self, pid: int, conn) -> None:
        self.pid, self.conn = pid, conn

    def run(self, fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        try:
            self.conn.send((fn, args))  # pickled whole before a byte is sent
        except Exception:  # the helper is gone, or the task cannot be sent
            return lambda: fn(*args)

        def result() -> Any:
            try:
                done, value = self.conn.recv()
            except (EOFError, OSError):
                done, value = False, None
            return value if done else fn(*args)

        return result

    def close(self) -> None:
        """End the helper, busy or not: nothing it could still send is wanted."""
        self.conn.close()
        with suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


@contextmanager
def helper() -> Iterator[Helper | None]:
    """A helper for the time of the `with`, or None where forking would not pay or is
    not safe (one core, another thread running, no fork)."""
    if not can_fork():
        yield None
        return
    from multiprocessing import Pipe

    here, there = Pipe()
    pid = fork()
    if pid == 0:  # pragma: no cover - the helper (its work is checked through the parent)
        here.close()
        _serve(there)
    there.close()
    process = Helper(pid, here)
    try:
        yield process
    finally:
        process.close()


def _serve(conn) -> NoReturn:  # pragma: no cover - runs in the helper
    """Run tasks until the parent closes the pipe. Ctrl-C is the parent's to handle
    (it ends the helper); nothing is ever printed here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.disable()  # short-lived, and its tasks make many objects and no cycles
    try:
        while True:
            try:
                fn, args = conn.recv()
            except (EOFError, OSError):
                break
            try:
                reply = (True, fn(*args))
            except BaseException:  # the parent works it out itself, and reports what fails
                reply = (False, None)
            conn.send(reply)
    except BaseException:  # noqa: S110 - the parent is gone or interrupted: just end
        pass
    finally:
        os._exit(0)
