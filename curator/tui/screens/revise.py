"""The relabel screen: the card screen for a case that is in the set already (opened from
the set browser, curator/tui/screens/browser.py). `k` saves the labels as the case's next
rev after asking why; the keys that decide a candidate (bin, skip, undo, a new question,
the browser) are off here."""

from __future__ import annotations

import sqlite3

from textual import work
from textual.binding import Binding

from curator.errors import CuratorError
from curator.review import Card, ReviewSession, WriteFailed
from curator.tui.screens.deciding import failure_reason
from curator.tui.screens.modals import reason_modal
from curator.tui.screens.review import ReviewScreen

_NOT_ON_RELABEL = {"decide", "undo_decision", "open_browser", "new_question"}


class ReviseScreen(ReviewScreen):
    """The card screen for an existing case (from the browser): `k` saves a new rev after
    asking for the reason; Escape goes back without changing anything."""

    BINDINGS = [
        Binding("k", "keep_card", "save", id="save-case", tooltip="Save the labels as the case's next rev (asks why)"),
        Binding("escape", "back", "back", id="revise-back", tooltip="Back to the set browser without saving"),
    ]

    def __init__(self, session: ReviewSession, card: Card, blink: bool = True):
        super().__init__(session, blink=blink)
        self.initial = card

    def _start(self) -> None:  # type: ignore[override]
        self.post_message(self.CardReady(self.initial, "relabel: k saves, escape goes back"))

    def action_keep_card(self) -> None:
        if (card := self._ready()) is None:
            return
        if problems := card.problems():
            self.app.bell()
            self._say("not saved: " + "; ".join(problems), error=True)
            return

        def done(reason: str | None) -> None:
            if reason:
                self._save(card, reason)

        self.app.push_screen(reason_modal("this change", blink=self.blink, context=self._modal_context()), done)

    @work(thread=True, exclusive=True, group="decide", exit_on_error=False)
    def _save(self, card: Card, reason: str) -> None:
        try:
            case = self.session.save_case(card, reason)
        except WriteFailed as exc:
            self.post_message(self.DecisionFailed(
                f"not saved: {exc.message}; labels kept: fix it, then press k to retry (escape: back)"))
            return
        except (CuratorError, OSError, sqlite3.Error) as exc:
            self.post_message(self.DecisionFailed(failure_reason(exc)))
            return
        self.app.call_from_thread(self.dismiss, case)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Bin, skip, undo, a new question and the browser do not apply to a case being
        relabelled: their keys are off here, and off the footer (retire a case with x in
        the browser)."""
        if action in _NOT_ON_RELABEL:
            return False
        return super().check_action(action, parameters)

    def action_back(self) -> None:
        self.dismiss(None)
