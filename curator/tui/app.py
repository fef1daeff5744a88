"""`ReviewApp`: opens a ReviewSession on a workspace and shows the review card."""

from __future__ import annotations

import json
import os
from pathlib import Path

from textual.app import App
from textual.binding import Binding

from curator.review import ReviewSession
from curator.workspace import Workspace


class ReviewApp(App[None]):
    CSS_PATH = "curator.tcss"
    TITLE = "curator review"
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, ws: Workspace, *, blink: bool = True, **options):
        super().__init__()
        self.ws = ws
        self.session = ReviewSession(ws, **options)
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

    def help_sections(self) -> list[tuple[str, list[Binding]]]:
        from curator.tui.screens.browser import BrowserScreen
        from curator.tui.screens.help import HelpScreen
        from curator.tui.screens.modals import TextModal
        from curator.tui.screens.review import ReviewScreen, ReviseScreen
        from curator.tui.widgets.passages import PassageList
        from curator.tui.widgets.preview import PassageText

        def own(cls) -> list[Binding]:
            return [b for b in cls.BINDINGS if isinstance(b, Binding)]

        return [
            ("card", own(ReviewScreen)),
            ("passages (card)", own(PassageList)),
            ("preview (card; tab to it)", own(PassageText)),
            ("relabel (from the browser)", own(ReviseScreen)),
            ("browser", own(BrowserScreen)),
            ("text boxes", own(TextModal)),
            ("this help", own(HelpScreen)),
            ("app", [Binding("ctrl+q", "quit", "quit", id="app-quit", tooltip="Quit from any screen")]),
        ]
