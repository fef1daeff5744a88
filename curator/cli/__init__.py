"""curator's command line. Each command lives in its own module of this package."""

import contextlib
import os
import sys

from curator.cli import corpus as _corpus  # noqa: E402,F401
from curator.cli import export as _export  # noqa: E402,F401
from curator.cli import generate as _generate  # noqa: E402,F401
from curator.cli import logs as _logs  # noqa: E402,F401
from curator.cli import queue as _queue  # noqa: E402,F401
from curator.cli import review as _review  # noqa: E402,F401
from curator.cli import score as _score  # noqa: E402,F401
from curator.cli import sets as _sets  # noqa: E402,F401
from curator.cli import triage as _triage  # noqa: E402,F401

# Importing a module registers its commands on `cli`.
from curator.cli import workspace as _workspace  # noqa: E402,F401
from curator.cli.main import cli, ends_after_command


def main() -> None:
    """The console script: the command, then a quick exit. Once a command is done (its
    output written, its workspace closed), the interpreter's own teardown only frees
    memory the system takes back anyway: 80 ms for any command, more after a big
    import. So the streams are flushed and the process ends there (`os._exit`). A
    command that fails with a traceback exits the usual way."""
    ends_after_command()
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
