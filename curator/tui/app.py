"""`ReviewApp`: opens a ReviewSession on a workspace and shows the review card."""

from __future__ import annotations

import json
import os
from pathlib import Path

from textual.app import App

from curator.review import ReviewSession
from curator.tui.screens.deciding import BREAKPOINTS
from curator.workspace import Workspace


class ReviewApp(App[None]):
    CSS_PATH = "curator.tcss"
    TITLE = "curator review"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = BREAKPOINTS

    def __init__(
        self, ws: Workspace, *, blink: bool = True, set_name: str | None = None, source: str = "all",
        slice: str | None = None, reviewer: str | None = None, session: ReviewSession | None = None,
    ):
        """The candidates of `source` (and `slice`), kept in `set_name` under `reviewer`'s
        name (see `ReviewSession`); `blink=False` stills the cursors (snapshot tests);
        `session`: a session made elsewhere to drive instead (the second pass)."""
        super().__init__()
        self.ws = ws
        self.session = session or ReviewSession(
            ws, set_name=set_name, source=source, slice=slice, reviewer=reviewer)
        self.blink = blink

    def on_mount(self) -> None:
        from curator.tui.screens.review import ReviewScreen

        self.set_keymap(dict(self.ws.config.keymap))
        self.push_screen(ReviewScreen(self.session, blink=self.blink))

    def on_unmount(self) -> None:
        self.session.close()
        trace = os.environ.get("CURATOR_REVIEW_TRACE")
        if trace:  # for bench/review_latency.py: how long each keep's durable write took
            Path(trace).write_text(json.dumps({"write_ms": self.session.stats.write_ms}), encoding="utf-8")
