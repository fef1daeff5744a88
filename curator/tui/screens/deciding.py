"""What the review card and the triage card share: each decision runs in a worker, the next
card shows only when the worker reports the write done, and keys pressed meanwhile are
refused with a bell, so no keystroke lands on a card the reviewer has not seen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from textual import on
from textual.binding import Binding
from textual.content import Content
from textual.dom import DOMNode
from textual.message import Message
from textual.screen import Screen

from curator.errors import CuratorError
from curator.tui.screens.help import HelpScreen
from curator.tui.screens.modals import TextModal
from curator.tui.widgets.lines import Lines

T = TypeVar("T")

# screen classes by terminal width, for both apps: the cards stack below 110 columns
BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
# and by height, for the review card: under 32 rows (80x24) the preview collapses
VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
APP_KEYS = ("app", [Binding("ctrl+q", "quit", "quit", id="app-quit", tooltip="Quit from any screen")])


def failure_reason(exc: Exception) -> str:
    """What went wrong, in one line for the card (never a traceback)."""
    if isinstance(exc, CuratorError):
        return exc.message
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    return str(exc)


def own_bindings(cls: type[DOMNode]) -> list[Binding]:
    return [b for b in cls.BINDINGS if isinstance(b, Binding)]


class DecidingScreen(Screen[None], Generic[T]):
    """A card (`current`: a review card or a triage item) decided by keys, one write at a time."""

    @dataclass
    class DecisionFailed(Message):
        message: str

    def __init__(self, keymap: dict[str, str], blink: bool = True):
        super().__init__()
        self.current: T | None = None
        self.busy = True  # until the first card arrives
        self.keymap = keymap
        self.blink = blink

    def help_sections(self) -> list[tuple[str, list[Binding]]]:
        """Every key of the app, by where it applies (the `?` screen)."""
        raise NotImplementedError

    def _label(self, role: str | None) -> None:
        """Label the highlighted passage `role` (None clears it)."""
        raise NotImplementedError

    def _ready(self) -> T | None:
        """The card on screen, or None (a bell) while a decision runs or when there is none."""
        if self.busy or self.current is None:
            self.app.bell()
            return None
        return self.current

    def _ask(self, title: str, value: str, then: Callable[[str], object], **options: Any) -> None:
        """Ask for one line of text in a modal; `then(text)` unless the reviewer cancels."""

        def done(text: str | None) -> None:
            if text is not None:
                then(text)

        self.app.push_screen(TextModal(title, value, blink=self.blink, context=self._modal_context(), **options), done)

    def _modal_context(self) -> Content | None:
        """What a modal is about, shown in it (the card under it is covered)."""
        return None

    @on(DecisionFailed)
    def decision_failed(self, message: DecisionFailed) -> None:
        self.busy = False
        self.app.bell()
        self._say(message.message, error=True)

    def action_mark_primary(self) -> None:
        self._label("primary")

    def action_mark_secondary(self) -> None:
        self._label("secondary")

    def action_clear_label(self) -> None:
        self._label(None)

    def action_show_help(self) -> None:
        self.app.push_screen(HelpScreen(self.help_sections(), self.keymap))

    def action_quit_app(self) -> None:
        if self.busy and self.current is not None:
            self._say("finishing the last write…")
        self.app.exit()

    def _say(self, text: str, error: bool = False) -> None:
        box = self.query_one("#message", Lines)
        box.set_class(error, "-error")
        box.update(Content(text))
