"""`ReviewApp`: opens a ReviewSession on a workspace and shows the review card."""

from __future__ import annotations

import json
import os
from pathlib import Path

from curator.review import ReviewSession
from curator.tui.crash import ReportingApp
from curator.tui.screens.deciding import BREAKPOINTS, VERTICAL_BREAKPOINTS
from curator.workspace import Workspace


class ReviewApp(ReportingApp):
    CSS_PATH = Path(__file__).with_name("curator.tcss")  # absolute: a subclass elsewhere finds it too
    TITLE = "curator review"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = BREAKPOINTS
    VERTICAL_BREAKPOINTS = VERTICAL_BREAKPOINTS

    def __init__(
        self, ws: Workspace, *, blink: bool = True, set_name: str | None = None, source: str = "all",
        slice: str | None = None, reviewer: str | None = None, ask_reviewer: bool = False,
        session: ReviewSession | None = None,
    ):
        """The candidates of `source` (and `slice`), kept in `set_name` under `reviewer`'s
        name (see `ReviewSession`); `blink=False` stills the cursors (snapshot tests);
        `session`: a session made elsewhere to drive instead (the second pass).
        `ask_reviewer`: ask for the name first (`curator serve`: one app per browser tab,
        each its own person), offering `reviewer` or the configured name."""
        super().__init__()
        self.ws = ws
        self.blink = blink
        self.set_name, self.source, self.slice = set_name, source, slice
        self.session: ReviewSession | None = session
        self.ask_reviewer = ask_reviewer
        self.reviewer = reviewer
        if session is None and not ask_reviewer:
            self.session = self._session(reviewer)

    def on_mount(self) -> None:
        self.set_keymap(dict(self.ws.config.keymap))
        if self.session is not None:
            self._open(self.session)
            return
        from curator.tui.screens.modals import TextModal, check_reviewer_name

        offered = self.reviewer or self.ws.config.reviewer or ""
        self.push_screen(TextModal(
            "Your name, recorded as the reviewer of every decision you make here",
            offered, check=check_reviewer_name, placeholder="your name", blink=self.blink,
            hint="Enter to start reviewing, Escape to leave"), self._named)

    def _named(self, name: str | None) -> None:
        if not name:
            self.exit()
            return
        self.session = self._session(name)
        self._open(self.session)

    def _session(self, reviewer: str | None) -> ReviewSession:
        return ReviewSession(self.ws, set_name=self.set_name, source=self.source, slice=self.slice,
                             reviewer=reviewer)

    def _open(self, session: ReviewSession) -> None:
        from curator.tui.screens.review import ReviewScreen

        self.push_screen(ReviewScreen(session, blink=self.blink))

    def on_unmount(self) -> None:
        if self.session is None:
            return
        self.session.close()
        trace = os.environ.get("CURATOR_REVIEW_TRACE")
        if trace:  # for bench/review_latency.py: how long each keep's durable write took
            Path(trace).write_text(json.dumps({"write_ms": self.session.stats.write_ms}), encoding="utf-8")
