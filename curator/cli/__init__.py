"""curator's command line. Each command lives in its own module of this package."""

import contextlib
import os
import sys

# Importing a command module registers its commands on `cli`.
from curator.cli import (  # noqa: F401
    agreement,
    corpus,
    export,
    generate,
    logs,
    queue,
    review,
    run,
    score,
    sets,
    sets_import,
    suggest,
    triage,
    workspace,
)
from curator.cli.main import cli


def main() -> None:
    """The console script: the command, then a quick exit. Once a command is done (its
    output written, its workspace closed), the interpreter's own teardown only frees
    memory the system takes back anyway: 80 ms for any command, more after a big
    import. So the streams are flushed and the process ends there (`os._exit`). A
    command that fails with a traceback exits the usual way.

    The rule this imposes on every command: nothing may wait for the interpreter's
    teardown. No `atexit` handlers, no `finally` or `__del__` work that must run after
    the command returns, no buffered file left for the garbage collector to close: a
    command closes and flushes every file it writes (and its workspace, through the
    click context) before it returns. Only stdout and stderr are flushed here."""
    try:
        cli(prog_name="curator")
    except SystemExit as exc:
        code = exc.code
    else:
        code = 0
    if code is not None and not isinstance(code, int):  # sys.exit("message"): printed, exit 1
        print(code, file=sys.stderr)
        code = 1
    _leave(code or 0)


def _leave(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        # a reader that went away (`| head`), a closed stream: nothing left to save
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


__all__ = ["cli", "main"]
