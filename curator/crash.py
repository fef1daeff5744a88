"""What curator does with an error nothing expected (a bug), in a command or in the
review and triage apps: one line and a hint on stderr, a report in a file, and exit
code 70 (EX_SOFTWARE), never a traceback at the terminal (Textual's own shows the
frames' local variables: passages, queries, whatever they held).

The report holds what a developer needs and nothing a log or a corpus put there: the
curator and Python versions, the command's name (not its arguments, which can name
files and hold tokens), the exception's type, its message with personal data and
secrets redacted, and the frames (file, line, function, source line, redacted too; no
variables).
It is written to the temporary folder with mode 0600. `CURATOR_DEBUG=1` lets the
exception through, traceback and all, for a developer at the terminal."""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from curator import __version__


def debugging() -> bool:
    return os.environ.get("CURATOR_DEBUG", "") not in ("", "0")


def report_text(exc: BaseException, command: str | None) -> str:
    """The report of `exc`: versions, command, type, redacted message, frames."""
    redact = _redactor()
    lines = [
        f"curator {__version__}, Python {platform.python_version()} on {platform.system()}",
        f"command: curator {command or '?'}",
        f"error: {type(exc).__module__}.{type(exc).__qualname__}: {redact(str(exc))}",
        "",
        "frames (most recent call last), the first error first:",
    ]
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain and len(chain) < 5:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for k, error in enumerate(reversed(chain)):
        if k:
            lines.append("")
        lines.append(f"{'then ' if k else ''}{type(error).__qualname__}: {redact(str(error))}")
        for frame in traceback.extract_tb(error.__traceback__):
            lines.append(f'  {frame.filename}:{frame.lineno} in {frame.name}')
            if frame.line:
                lines.append(f"    {redact(frame.line)}")
    return "\n".join(lines) + "\n"


def _redactor() -> Callable[[str], str]:
    """The log redactor, or, if the bug is in what it needs, one that leaves text out."""
    try:
        from curator.logs.redact import Redactor

        return Redactor().redact
    except Exception:  # noqa: BLE001 - the report must be written whatever is broken
        return lambda _text: "(left out: the redactor could not be loaded)"


def write_report(exc: BaseException, command: str | None) -> Path | None:
    """Write the report to a new file of the temporary folder; None if it cannot be."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(tempfile.gettempdir()) / f"curator-crash-{stamp}-{os.getpid()}.txt"
    try:
        text = report_text(exc, command)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except Exception:  # noqa: BLE001 - no report, but still the line that says so
        return None
    return path


def announce(exc: BaseException, command: str | None) -> tuple[str, str]:
    """Write the report of `exc` and give the message and the hint that say so."""
    report = write_report(exc, command)
    message = (f"internal error ({type(exc).__name__}) in curator {command or ''} {__version__}: "
               "this is a bug, not your input.").replace("  ", " ")
    where = f"the report is in {report}" if report else "no report could be written"
    hint = (f"{where}; please file it with the issue (it holds no arguments, data or secrets). "
            "CURATOR_DEBUG=1 shows the traceback.")
    return message, hint


def database_trouble(exc: BaseException) -> tuple[str, str] | None:
    """The message and hint for SQLite's word that the workspace database is busy, full
    or damaged (the machine's or the file's trouble, not a bug), else None."""
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is None or not isinstance(exc, sqlite3.DatabaseError):
        return None
    text = str(exc)
    if "locked" in text or "busy" in text:
        return ("the workspace database is busy: another curator command is writing to it",
                "Run this one again when that one is done.")
    if "full" in text:
        return ("the disk is full: the workspace database (.curator/workspace.db) cannot grow",
                "Free some space, then run the command again; nothing half-written was kept.")
    if "malformed" in text or "not a database" in text or "disk I/O" in text:
        return (f"the workspace database (.curator/workspace.db) cannot be read: {text}",
                "Restore it from a backup, or move it aside: the next command makes a new, empty one "
                "(add the corpus and the logs again); the question sets in datasets/ are plain files "
                "and stay as they are.")
    return None


def command_name(argv: list[str] | None = None) -> str | None:
    """The subcommand's name from the command line (the first word that is no option)."""
    args = sys.argv[1:] if argv is None else argv
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in ("-w", "--workspace"):
            skip = True
            continue
        if not arg.startswith("-"):
            return arg
    return None
