"""The review card: one candidate, its passage suggestions, and the keys that decide it
(one write at a time, as every `DecidingScreen`)."""

from __future__ import annotations

import contextlib
import gc
import sqlite3
from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.widgets import Footer

from curator.errors import CuratorError
from curator.review import Card, ReviewSession, WriteFailed
from curator.tui.screens.deciding import APP_KEYS, DecidingScreen, failure_reason, own_bindings
from curator.tui.screens.help import HelpScreen
from curator.tui.screens.modals import TextModal
from curator.tui.widgets.card import LabelState, Provenance, Question, modal_context
from curator.tui.widgets.lines import Lines
from curator.tui.widgets.passages import PassageList
from curator.tui.widgets.preview import PassageText, Preview
from curator.tui.widgets.stats import StatsBar

PREFETCH_AFTER = 0.05  # seconds: a card's frame takes 10-20 ms; a reviewer's next key, longer
_DONE = {"keep": "kept", "bin": "binned", "skip": "skipped", "undo": "undone"}


def _slice_bindings() -> list[Binding]:
    return [
        Binding(str(i), f"choose_slice({i})", f"slice {i}", show=False, id=f"slice-{i}",
                tooltip=f"Put the question in slice {i} (numbered as on the card)")
        for i in range(1, 10)
    ]


class ReviewScreen(DecidingScreen[Card]):
    BINDINGS = [
        Binding("k", "decide('keep')", "keep", id="keep", tooltip="Keep: append the case to the set and show the next card"),
        Binding("x", "decide('bin')", "bin", id="bin", tooltip="Bin: not a useful question; show the next card"),
        Binding("s", "decide('skip')", "skip", id="skip", tooltip="Skip for later: it comes back after every pending card"),
        Binding("u", "undo_decision", "undo", id="undo", tooltip="Undo the last decision (repeat for earlier ones)"),
        Binding("p", "mark_primary", "primary", id="primary", tooltip="Mark the highlighted passage primary (the answer)"),
        Binding("o", "mark_secondary", "secondary", id="secondary", tooltip="Mark the highlighted passage secondary (acceptable)"),
        Binding("c", "clear_label", "clear", show=False, id="clear", tooltip="Clear the highlighted passage's label"),
        Binding("g", "cycle_grade", "grade", show=False, id="grade",
                tooltip="Grade the highlighted labelled passage 1, 2 or 3 (cycles)"),
        Binding("m", "set_max_rank", "max rank", show=False, id="max-rank",
                tooltip="Max rank: the first primary must rank at or above N"),
        *_slice_bindings(),
        Binding("n", "toggle_negative", "negative", show=False, id="negative", tooltip="Negative: the corpus has no answer (expect_empty)"),
        Binding("r", "toggle_require_all", "all", show=False, id="require-all", tooltip="Multi-hop: every primary is required"),
        Binding("f", "toggle_pin", "pin", show=False, id="pin", tooltip="Freshness: pin primaries to the revision shown"),
        Binding("a", "set_max_age", "max age", show=False, id="max-age", tooltip="Freshness: the answer must be newer than N days"),
        Binding("e", "edit_question", "edit", show=False, id="edit",
                tooltip="Edit the question text (the original is kept in the case's source)"),
        Binding("i", "new_question", "new question", show=False, id="new-question",
                tooltip="Type a new question in place (a negative, or one nobody asked yet)"),
        Binding("w", "write_explanation", "why", show=False, id="explain", tooltip="Write the explanation: why these labels"),
        Binding("slash", "search_corpus", "search", id="search", tooltip="Search the corpus with your own words"),
        Binding("t", "toggle_regression", "regression", show=False, id="regression", tooltip="Tag regression (frozen subset)"),
        Binding("b", "open_browser", "browse", id="browser", tooltip="Open the set browser"),
        Binding("question_mark", "show_help", "help", id="help", tooltip="List every key"),
        Binding("q", "quit_app", "quit", id="quit", tooltip="Quit (leases are given back)"),
    ]

    @dataclass
    class CardReady(Message):
        """A worker finished: show this card (None: the queue is empty)."""

        card: Card | None
        note: str = ""

    class Prefetched(Message):
        """The next cards are prepared: draw the first of them ahead of time."""

    @dataclass
    class SearchDone(Message):
        card: Card
        text: str
        found: int

    def __init__(self, session: ReviewSession, blink: bool = True):
        super().__init__(session.ws.config.keymap, blink)
        self.session = session

    def help_sections(self) -> list[tuple[str, list[Binding]]]:
        from curator.tui.screens.browser import BrowserScreen
        from curator.tui.screens.revise import ReviseScreen

        return [
            ("card", own_bindings(ReviewScreen)),
            ("passages (card)", own_bindings(PassageList)),
            ("preview (card; tab to it)", own_bindings(PassageText)),
            ("relabel (from the browser)", own_bindings(ReviseScreen)),
            ("browser", own_bindings(BrowserScreen)),
            ("text boxes", own_bindings(TextModal)),
            ("this help", own_bindings(HelpScreen)),
            APP_KEYS,
        ]

    def compose(self) -> ComposeResult:
        yield StatsBar(id="stats")
        with Vertical(id="card"):
            yield Question("Loading the queue…", id="question")
            yield Provenance(id="provenance")
            yield LabelState(id="labels")
        with Horizontal(id="body"):
            with Vertical(id="passages-box"):
                yield PassageList(id="passages")
            yield Preview(id="preview-box")
        yield Lines(id="message")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(PassageList).focus()
        self._start()

    def on_resize(self) -> None:
        # under 110 columns the footer's keys close up, so `?` and `q` stay on screen at 80
        self.query_one(Footer).compact = self.size.width < 110

    # ---- workers -----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="decide", exit_on_error=False)
    def _start(self) -> None:
        try:
            self.session.start()
            card = self.session.next_card()
        except (CuratorError, OSError, sqlite3.Error) as exc:
            self.post_message(self.DecisionFailed(f"could not open the queue: {failure_reason(exc)}; q quits"))
            return
        # What startup built (widgets, caches, the session) lives as long as the app: keep
        # it out of the collector's full passes, which otherwise stall a frame by tens of ms.
        gc.freeze()
        note = ""
        if self.session.reconciled:
            note = f"recovered {len(self.session.reconciled)} keep(s) a crash had not recorded"
        self.post_message(self.CardReady(card, note))

    @work(thread=True, exclusive=True, group="prefetch", exit_on_error=False)
    def _prefetch(self) -> None:
        # Only a head start: next_card leases and builds the card itself if this fails.
        with contextlib.suppress(CuratorError, OSError, sqlite3.Error):
            self.session.prefetch_cards()
            self.post_message(self.Prefetched())

    @work(thread=True, exclusive=True, group="decide", exit_on_error=False)
    def _decide(self, action: str, card: Card) -> None:
        try:
            note = ""
            if action == "keep":
                case = self.session.keep(card)
                note = f"kept as {case.query_id}"
            elif action == "bin":
                self.session.bin(card)
                note = "binned"
            elif action == "skip":
                self.session.skip(card)
                note = "skipped for later"
            elif action == "undo":
                back = self.session.undo()
                if back is None:
                    self.post_message(self.DecisionFailed("nothing to undo"))
                    return
                if card is not back and card.candidate is not None:
                    # The card on screen goes back to the front of this reviewer's queue.
                    self.session.requeue(card)
                self.post_message(self.CardReady(back, "undone"))
                return
            nxt = self.session.next_card()
        except WriteFailed as exc:
            again = {"keep": "k", "bin": "x", "skip": "s", "undo": "u"}[action]
            self.post_message(self.DecisionFailed(
                f"not {_DONE[action]}: {exc.message}; card and labels kept: fix it, then "
                f"press {again} to retry (q quits)"))
            return
        except (CuratorError, OSError, sqlite3.Error) as exc:
            self.post_message(self.DecisionFailed(failure_reason(exc)))
            return
        self.post_message(self.CardReady(nxt, note))

    @work(thread=True, exclusive=True, group="decide", exit_on_error=False)
    def _new_question(self, text: str, current: Card | None) -> None:
        try:
            card = self.session.add_question(text)
        except (CuratorError, OSError, sqlite3.Error) as exc:
            self.post_message(self.DecisionFailed(f"not added: {failure_reason(exc)}"))
            return
        if current is not None and current.candidate is not None:
            self.session.requeue(current)  # the card it replaces comes next
        self.post_message(self.CardReady(card, "new question: label it, then k keeps it"))

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, card: Card, text: str) -> None:
        try:
            found = self.session.add_search(card, text)
        except (CuratorError, OSError, sqlite3.Error) as exc:
            self.post_message(self.DecisionFailed(f"search failed: {failure_reason(exc)}"))
            return
        self.post_message(self.SearchDone(card, text, len(found)))

    # ---- messages ----------------------------------------------------------------------

    @on(CardReady)
    def show_card(self, message: CardReady) -> None:
        self.busy = False
        self.current = card = message.card
        if card is not None and card.candidate is not None:
            # After the frame: a prefetch thread running during it takes the GIL and doubles it.
            self.set_timer(PREFETCH_AFTER, self._prefetch)
        self._say(message.note)
        if card is None:
            self._render_stats()
            self.query_one(Question).update("The queue is empty: nothing left to review.")
            self.query_one(Provenance).update("Add candidates with `curator import-logs` or `curator generate`; b opens the set.")
            self.query_one(LabelState).update("")
            self.query_one(PassageList).clear_rows()
            self.query_one(Preview).show(None)
            return
        with self.app.batch_update():  # one frame for the whole card
            self._render_stats()
            self.query_one(Question).show(card)
            self.query_one(Provenance).show(card)
            self.query_one(LabelState).show(card, self.session.slices)
            self.query_one(PassageList).show_card(card)
            self._preview(self.query_one(PassageList).highlighted)

    @on(Prefetched)
    def prepare_next(self) -> None:
        """While the reviewer reads this card, make the next one's lines and strips: once the
        decision is written, its frame only swaps them in."""
        if (card := self.session.upcoming()) is not None and self.current is not None:
            self._prepare(card)

    def _prepare(self, card: Card) -> None:
        for widget in (self.query_one(Question), self.query_one(Provenance), self.query_one(PassageList)):
            widget.prepare_card(card)
        self.query_one(LabelState).prepare_card(card, self.session.slices)
        self.query_one(Preview).prepare(card.rows[0] if card.rows else None)

    @on(SearchDone)
    def search_done(self, message: SearchDone) -> None:
        if message.card is not self.current:
            return
        self.query_one(PassageList).show_card(message.card)
        self._preview(0)
        if message.found:
            self._say(f"found {message.found} passage(s) for “{message.text}”: now at the top, in search order")
        else:
            self._say(f"found no passage for “{message.text}”")

    @on(PassageList.Highlighted)
    def highlighted(self, event: PassageList.Highlighted) -> None:
        self._preview(event.index)

    # ---- actions -----------------------------------------------------------------------

    def action_decide(self, action: str) -> None:
        """Keep, bin or skip the card on screen (a keep the card refuses: DecisionFailed)."""
        if (card := self._ready()) is not None:
            self.busy = True
            self._decide(action, card)

    def action_undo_decision(self) -> None:
        if self.busy:
            self.app.bell()
            return
        self.busy = True
        self._decide("undo", self.current or Card(candidate=None, query="", rows=[]))

    def _highlighted(self) -> tuple[Card, int] | None:
        """The card and its highlighted row's index, or None (said why) when there is none."""
        if (card := self._ready()) is None:
            return None
        index = self.query_one(PassageList).highlighted
        if index is None or not card.rows:
            self._say("no passage highlighted", error=True)
            return None
        return card, index

    def _label(self, role: str | None) -> None:
        if (target := self._highlighted()) is None:
            return
        card, index = target
        card.set_label(card.rows[index].id, role)
        if role and card.expect_empty:
            card.expect_empty = False
        self.query_one(PassageList).refresh_row(card, index)
        self._labels()

    def action_cycle_grade(self) -> None:
        if (target := self._highlighted()) is None:
            return
        card, index = target
        row = card.rows[index]
        grade = card.cycle_grade(row.id)
        if grade is None:
            self._say("grade a labelled passage: mark it primary (p) or secondary (o) first", error=True)
            return
        self.query_one(PassageList).refresh_row(card, index)
        self._labels()
        self._say(f"grade {grade} for {row.id}")

    def action_choose_slice(self, number: int) -> None:
        if (card := self._ready()) is None:
            return
        if number > len(self.session.slices):
            self._say(f"no slice {number}: there are {len(self.session.slices)}", error=True)
            return
        card.apply_slice(self.session.slices[number - 1])
        self.query_one(PassageList).show_card(card, keep_index=True)
        self._labels()

    def action_toggle_negative(self) -> None:
        """Negative: the negative slice with its defaults (no passages, expect_empty);
        pressed again, back to no slice (choose one with 1-9)."""
        if (card := self._ready()) is None:
            return
        if card.expect_empty:
            card.expect_empty = False
            if card.slice == "negative":
                card.slice = None
        elif "negative" in self.session.slices:
            card.apply_slice("negative")
        else:
            card.expect_empty = True
            card.labels.clear()
        self.query_one(PassageList).show_card(card, keep_index=True)
        self._labels()

    def action_toggle_require_all(self) -> None:
        if card := self._ready():
            self._set(card, require_all=not card.require_all)

    def action_toggle_pin(self) -> None:
        if card := self._ready():
            self._set(card, pinned=not card.pinned)

    def action_toggle_regression(self) -> None:
        if card := self._ready():
            card.toggle_tag("regression")
            self._labels()

    def action_set_max_rank(self) -> None:
        self._ask_number("max_rank", "The first primary must rank at or above (empty clears it)",
                         1, "a rank of 1 or more (empty clears the max rank)")

    def action_set_max_age(self) -> None:
        self._ask_number("max_age_days", "Maximum age of the answer, in days (empty clears it)",
                         0, "a whole number of days (empty clears the max age)", unpin=True)

    def _ask_number(self, field: str, title: str, least: int, error: str, unpin: bool = False) -> None:
        """Ask for the card's whole-number `field` (at least `least`) in a modal; empty clears
        it. `unpin`: a value set replaces the revision pin (a max age instead of a pin)."""

        def check(text: str) -> str | None:
            return None if text == "" or (text.isdigit() and int(text) >= least) else error

        if card := self._ready():
            current = getattr(card, field)
            self._ask(title, "" if current is None else str(current),
                      lambda text: self._set(card, **{field: int(text) if text else None},
                                             **({"pinned": False} if unpin and text else {})), check=check)

    def action_edit_question(self) -> None:
        if card := self._ready():
            self._ask("Edit the question", card.query, lambda text: self._set(card, query=text or card.query))

    def action_new_question(self) -> None:
        """A question typed in place: queued as a manual candidate and shown as the card
        (the card on screen comes back next)."""
        if self._ready() is None:
            return
        current = self.current

        def add(text: str) -> None:
            if text:
                self.busy = True
                self._new_question(text, current)

        self._ask("A new question (typed in place; n then makes it a negative)", "", add,
                  placeholder="the question")

    def action_write_explanation(self) -> None:
        if card := self._ready():
            self._ask("Explanation: why these labels?", card.explanation,
                      lambda text: self._set(card, explanation=text))

    def action_search_corpus(self) -> None:
        if card := self._ready():
            self._ask("Search the corpus", "", lambda text: self._search_for(card, text),
                      placeholder="your words")

    def _search_for(self, card: Card, text: str) -> None:
        if not text:
            return
        self._say(f"searching for “{text}”…")
        self._search(card, text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A blind second pass keeps the set browser closed (it would show the first labels)
        and adds no questions: those keys are off there, and off the footer."""
        if self.session.blind and action in ("open_browser", "new_question"):
            return False
        return super().check_action(action, parameters)

    def action_open_browser(self) -> None:
        from curator.tui.screens.browser import BrowserScreen

        self.app.push_screen(BrowserScreen(self.session, blink=self.blink))

    # ---- drawing -----------------------------------------------------------------------

    def _set(self, card: Card, **fields: Any) -> None:
        """Change the card's fields and redraw what shows them."""
        for name, value in fields.items():
            setattr(card, name, value)
        if "query" in fields:
            self.query_one(Question).show(card)
        self._labels()

    def _labels(self) -> None:
        if self.current is not None:
            self.query_one(LabelState).show(self.current, self.session.slices)
        self._say("")

    def _render_stats(self) -> None:
        self.query_one(StatsBar).show(self.session.stats, self.session.set_name, self.session.reviewer,
                                      blind=self.session.blind)

    def _modal_context(self) -> Content | None:
        """The question, and the highlighted passage with its label, for a modal."""
        return None if self.current is None else modal_context(self.current, self.query_one(PassageList).highlighted)

    def _preview(self, index: int | None) -> None:
        rows = self.current.rows if self.current is not None else []
        self.query_one(Preview).show(rows[index] if index is not None and 0 <= index < len(rows) else None)
