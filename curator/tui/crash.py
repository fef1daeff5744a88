"""The apps' answer to a bug: where Textual would print a traceback with every frame's
local variables (a passage, a query, whatever they held), the app writes curator's
crash report (curator/crash.py) and ends with one line and a hint; the command exits 70.
Decisions made before it are already saved: each is written as it is made.

Textual has no public hook for this: `_handle_exception` and `_fatal_error` are the
methods its own exception path calls (textual 8); `CURATOR_DEBUG=1` keeps Textual's."""

from __future__ import annotations

from rich.text import Text
from textual.app import App

from curator import crash
from curator.errors import EXIT_INTERNAL


class ReportingApp(App[None]):
    """An app whose unexpected errors end as a report, not a traceback."""

    command = "review"  # the command that runs it, for the report
    crashed: Exception | None = None
    crash_report_hint: str | None = None

    def _handle_exception(self, error: Exception) -> None:
        if self.crashed is None:
            self.crashed = error
        super()._handle_exception(error)

    def _fatal_error(self) -> None:
        if self.crashed is None or crash.debugging():
            super()._fatal_error()
            return
        self.bell()
        message, hint = crash.announce(self.crashed, self.command)
        self.crash_report_hint = hint
        self.panic(Text.assemble(("error: ", "bold red"), message, "\n", ("hint: ", "dim"), hint, "\n",
                                 "The decisions made before it are saved: each is written as it is made."))

    def exit_status(self) -> int:
        """The command's exit code once the app ended: 70 after a bug, else the app's."""
        if self.crashed is not None and not crash.debugging():
            return EXIT_INTERNAL
        return self.return_code or 0


