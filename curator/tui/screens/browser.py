"""The set browser: the set's cases, a filter, each case's history, and changes to a case
(relabel, re-slice, edit, retire), each asking for its reason."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from curator.errors import CuratorError
from curator.models import Case
from curator.review import ReviewSession
from curator.tui.screens.modals import TextModal, reason_modal


def matches(case: Case, query: str) -> bool:
    """Filter words: `slice:NAME`, `tag:NAME`, `status:active|retired`; other words must
    appear in the question or query_id."""
    for word in query.lower().split():
        key, _, value = word.partition(":")
        if value and key == "slice":
            if not case.slice.lower().startswith(value):
                return False
        elif value and key == "tag":
            if value not in [t.lower() for t in case.tags]:
                return False
        elif value and key == "status":
            if case.status != value:
                return False
        elif word not in case.query.lower() and word not in case.query_id:
            return False
    return True


class BrowserScreen(Screen[None]):
    BINDINGS = [
        Binding("slash", "focus_filter", "filter", id="browser-filter", tooltip="Filter: words, slice:X, tag:X, status:X"),
        Binding("l", "relabel_case", "relabel", id="browser-relabel", tooltip="Relabel the case on the card screen (asks why)"),
        Binding("e", "edit_case", "edit", id="browser-edit", tooltip="Edit the question text (asks why)"),
        Binding("s", "reslice_case", "re-slice", id="browser-reslice", tooltip="Move the case to another slice (asks why)"),
        Binding("x", "retire_case", "retire", id="browser-retire", tooltip="Retire the case (asks why)"),
        Binding("escape,b", "back", "back", id="browser-back", tooltip="Back to the review card"),
    ]

    @dataclass
    class Loaded(Message):
        cases: list[Case]
        note: str = ""

    def __init__(self, session: ReviewSession, blink: bool = True):
        super().__init__()
        self.session = session
        self.blink = blink
        self.cases: list[Case] = []
        self.shown: list[Case] = []

    def compose(self) -> ComposeResult:
        yield Static(f"Set [b]{self.session.set_name}[/b]", id="browser-title")
        yield Input(placeholder="filter: words, slice:paraphrase, tag:regression, status:retired",
                    id="browser-filter")
        with Horizontal(id="browser-body"):
            yield DataTable(id="cases", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="history-box"):
                yield Static(id="history")
        yield Static(id="browser-message")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).cursor_blink = self.blink
        table = self.query_one(DataTable)
        table.add_columns("query_id", "slice", "status", "rev", "question")
        table.focus()
        self._load()

    @work(thread=True, exclusive=True, group="browser", exit_on_error=False)
    def _load(self, note: str = "") -> None:
        self.post_message(self.Loaded(self.session.cases(), note))

    @on(Loaded)
    def loaded(self, message: Loaded) -> None:
        self.cases = message.cases
        self._fill()
        self.query_one("#browser-message", Static).update(message.note)

    @on(Input.Changed)
    def filter_changed(self) -> None:
        self._fill()

    @on(Input.Submitted)
    def filter_done(self) -> None:
        self.query_one(DataTable).focus()

    def _fill(self) -> None:
        text = self.query_one(Input).value
        table = self.query_one(DataTable)
        keep = table.cursor_row
        table.clear()
        self.shown = [c for c in self.cases if matches(c, text)]
        for case in self.shown:
            table.add_row(case.query_id, case.slice, case.status, str(case.rev), case.query[:60])
        if self.shown:
            table.move_cursor(row=min(keep, len(self.shown) - 1))
        self._history()

    @on(DataTable.RowHighlighted)
    def row_highlighted(self) -> None:
        self._history()

    def _current(self) -> Case | None:
        row = self.query_one(DataTable).cursor_row
        return self.shown[row] if 0 <= row < len(self.shown) else None

    def _history(self) -> None:
        case = self._current()
        box = self.query_one("#history", Static)
        if case is None:
            box.update("No cases match." if self.cases else "No cases in this set yet.")
            return
        lines = [Content.from_markup("[b]$q[/b]\n[dim]$qid[/]\n", q=case.query, qid=case.query_id)]
        for rev, action, reason in self.session.history(case.query_id):
            labels = ", ".join(f"{r.id} ({r.role[0]})" for r in rev.relevant) or (
                "negative" if rev.expect_empty else "–")
            lines.append(Content.from_markup(
                "[b]rev $rev[/b] $action · $who · $at\n  $reason\n  $slice: $labels\n",
                rev=str(rev.rev), action=action, who=rev.reviewer, at=rev.at, slice=rev.slice,
                reason=reason or "(added)", labels=labels,
            ))
        box.update(Content("\n").join(lines))

    # ---- changes -----------------------------------------------------------------------

    def action_focus_filter(self) -> None:
        self.query_one(Input).focus()

    def action_back(self) -> None:
        self.dismiss(None)

    def action_relabel_case(self) -> None:
        case = self._current()
        if case is not None:
            self._open_revise(case)

    @work(thread=True, exclusive=True, group="browser-open", exit_on_error=False)
    def _open_revise(self, case: Case) -> None:
        """The case on the card screen; its passages are read here, off the UI thread."""
        from curator.tui.screens.review import ReviseScreen

        screen = ReviseScreen(self.session, self.session.card_for_case(case), blink=self.blink)
        self.app.call_from_thread(self.app.push_screen, screen, self._revised)

    def _revised(self, saved: Case | None) -> None:
        if saved is not None:
            self._load(f"{saved.query_id} rev {saved.rev} saved")

    def action_edit_case(self) -> None:
        case = self._current()
        if case is None:
            return

        def got_text(text: str | None) -> None:
            if text and text != case.query:
                self._ask_reason(case, {"query": text}, "edit")

        self.app.push_screen(TextModal("Edit the question", case.query, blink=self.blink), got_text)

    def action_reslice_case(self) -> None:
        case = self._current()
        if case is None:
            return
        slices = self.session.slices

        def check(text: str) -> str | None:
            return None if text in slices or (text.isdigit() and 1 <= int(text) <= len(slices)) else (
                f"one of: {', '.join(slices)} (or its number)")

        def got(text: str | None) -> None:
            if text:
                name = slices[int(text) - 1] if text.isdigit() else text
                if name != case.slice:
                    self._ask_reason(case, {"slice": name}, "reslice")

        hint = "  ".join(f"{i}:{n}" for i, n in enumerate(slices, 1))
        self.app.push_screen(TextModal("Move to which slice?", case.slice, hint=hint, check=check,
                                       blink=self.blink), got)

    def action_retire_case(self) -> None:
        case = self._current()
        if case is None or case.status == "retired":
            return
        self._ask_reason(case, {}, "retire")

    def _ask_reason(self, case: Case, changes: dict[str, str], action: str) -> None:
        def got(reason: str | None) -> None:
            if reason:
                self._revise(case.query_id, changes, action, reason)

        self.app.push_screen(reason_modal(f"this {action}", blink=self.blink), got)

    @work(thread=True, exclusive=True, group="browser-write", exit_on_error=False)
    def _revise(self, query_id: str, changes: dict[str, str], action: str, reason: str) -> None:
        try:
            case = self.session.revise(query_id, changes, action=action, reason=reason)
            note = f"{case.query_id} rev {case.rev}: {action}"
        except CuratorError as exc:
            note = f"not saved: {exc.message}"
        self.post_message(self.Loaded(self.session.cases(), note))
