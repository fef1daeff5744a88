"""Errors that carry a message meant for the person at the terminal.

The CLI prints `message` (and `hint` on its own line) without a traceback and exits
with `exit_code`; library callers can catch `CuratorError`.
"""

from __future__ import annotations

# Exit codes shared by every command (documented in docs/cli.md).
EXIT_OK = 0
EXIT_FAILED = 1  # verification failed, a gate is red, a command could not do its job
EXIT_USAGE = 2  # click's own code for bad options
EXIT_PARTIAL = 3  # the command finished, but some input was skipped (reported)
EXIT_INTERNAL = 70  # a bug: sysexits' EX_SOFTWARE (a line and a report, curator/crash.py)
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


class CuratorError(Exception):
    exit_code = EXIT_FAILED

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class WorkspaceNotFound(CuratorError):
    pass


class ConfigError(CuratorError):
    pass


class InputError(CuratorError):
    """Bad input that names the file (and line) and what was expected."""

    def __init__(self, path: str, message: str, line: int | None = None, hint: str | None = None):
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}", hint)
        self.path = str(path)
        self.line = line
