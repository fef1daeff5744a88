"""The set browser: the set's cases, a filter, each case's history, and changes to a case
(relabel, re-slice, edit, retire), each asking for its reason.

Two filters show what needs a person: `d` the open disagreements between a case's first
reviewer and a second judgment (`1` / `2` take a side, `l` relabels; curator.adjudicate),
and `m` the cases labelled with passages the current corpus no longer has (`l` relabels
with the old text beside the current candidates). Filtering keeps the cursor on the case
it was on, or moves it to the first match.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from textual import events, on, work
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

if TYPE_CHECKING:
    from curator.agreement import Disagreement, Side
    from curator.corpus.labels import StaleLabel

COLUMNS = ("query_id", "slice", "status", "rev", "question")


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


def column_widths(width: int, longest_id: int, longest_slice: int) -> list[int]:
    """Widths of query_id, slice, status, rev and question for a table `width` cells wide
    (each column pads 1 cell each side; 2 for the scroll bar): rev and status whole, the
    question gets what the id and slice leave, never under 12."""
    room = max(width - 2 * len(COLUMNS) - 2, 40)
    rev, status = 3, 7
    slice_w = min(longest_slice, 10)
    id_w = min(longest_id, max(12, (room - rev - status - slice_w) // 2))
    question = max(12, room - rev - status - slice_w - id_w)
    return [id_w, slice_w, status, rev, question]


def cut(text: str, width: int, *, keep_tail: bool = False) -> str:
    """`text` in `width` cells: cut with an ellipsis at the end, or in the middle (an id's
    distinguishing tail stays: `#diagnosis` and `#diagnosis-part-2` differ at their end)."""
    if len(text) <= width:
        return text
    if not keep_tail:
        return text[: width - 1] + "…"
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


class BrowserScreen(Screen[None]):
    BINDINGS = [
        Binding("slash", "focus_filter", "filter", id="browser-filter", tooltip="Filter: words, slice:X, tag:X, status:X"),
        Binding("d", "toggle_disagreements", "disagreements", id="browser-disagreements",
                tooltip="Only the cases a second reviewer judged differently (curator agreement)"),
        Binding("m", "toggle_stale", "gone passages", id="browser-stale",
                tooltip="Only the cases labelled with passages the corpus no longer has"),
        Binding("1", "take_side('first')", "first's side", id="browser-take-first", show=False,
                tooltip="Disagreement: keep the first reviewer's decision (asks why)"),
        Binding("2", "take_side('second')", "second's side", id="browser-take-second", show=False,
                tooltip="Disagreement: take the second reviewer's decision (asks why)"),
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
        disagreements: dict[str, Disagreement] = field(default_factory=dict)
        stale: dict[str, list[StaleLabel]] = field(default_factory=dict)

    def __init__(self, session: ReviewSession, blink: bool = True):
        super().__init__()
        self.session = session
        self.blink = blink
        self.blind = session.blind  # a second pass: the set stays hidden
        self.cases: list[Case] = []
        self.shown: list[Case] = []
        self.disagreements: dict[str, Disagreement] = {}
        self.stale: dict[str, list[StaleLabel]] = {}
        self.only: str | None = None  # None | "disagreements" | "stale"
        self._widths: list[int] = []

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
        self.query_one(DataTable).focus()
        if self.blind:
            self.query_one(Input).disabled = True
            self.query_one("#history", Static).update(
                "The set browser is closed during a blind second pass: it would show the first "
                "reviewer's labels. Esc goes back; `curator agreement` compares the two afterwards.")
            return
        self._load()

    @work(thread=True, exclusive=True, group="browser", exit_on_error=False)
    def _load(self, note: str = "") -> None:
        self.post_message(self._read(note))

    def _read(self, note: str) -> Loaded:
        """The set's cases, its open disagreements and its cases with gone passages (in a
        worker: files and the database are read)."""
        from curator.adjudicate import stale_cases
        from curator.agreement import open_disagreements

        cases = self.session.cases()
        try:
            with self.session.reader.lock:
                disputed = open_disagreements(self.session.reader, self.session.set_name)
            stale = stale_cases(self.session, cases)
        except (CuratorError, OSError) as exc:  # the browser still shows the set
            disputed, stale = {}, {}
            note = f"{note} · could not read the second judgments: {exc}".strip(" ·")
        return self.Loaded(cases, note, disputed, stale)

    @on(Loaded)
    def loaded(self, message: Loaded) -> None:
        self.cases = message.cases
        self.disagreements, self.stale = message.disagreements, message.stale
        self._fill()
        notes = [message.note] if message.note else []
        if self.disagreements and self.only != "disagreements":
            notes.append(f"{len(self.disagreements)} open disagreement(s): d lists them")
        if self.stale and self.only != "stale":
            notes.append(f"{len(self.stale)} case(s) label passages the corpus no longer has: m lists them")
        self.query_one("#browser-message", Static).update(" · ".join(notes))

    @on(Input.Changed)
    def filter_changed(self) -> None:
        self._fill()

    @on(Input.Submitted)
    def filter_done(self) -> None:
        self.query_one(DataTable).focus()

    def on_resize(self, event: events.Resize) -> None:
        if not self.blind:
            self.call_after_refresh(self._fill)  # the table's new width is known after the layout

    def _fill(self) -> None:
        """Show the cases that pass the filters; the cursor stays on the case it was on, or
        goes to the first match."""
        text = self.query_one(Input).value
        table = self.query_one(DataTable)
        was = self._current()
        pool = self.cases + self._binned_rows() if self.only == "disagreements" else self.cases
        self.shown = [c for c in pool if matches(c, text) and self._in_view(c)]
        widths = column_widths(table.size.width or 72, max((len(c.query_id) for c in self.cases), default=8),
                               max((len(c.slice) for c in self.cases), default=5))
        if widths != self._widths:
            table.clear(columns=True)
            for name, width in zip(COLUMNS, widths, strict=True):
                table.add_column(name, width=width, key=name)
            self._widths = widths
        else:
            table.clear()
        id_w, slice_w, _, _, question_w = widths
        for case in self.shown:
            mark = "!" if case.query_id in self.disagreements or case.query_id in self.stale else ""
            table.add_row(cut(mark + case.query_id, id_w, keep_tail=True), cut(case.slice, slice_w), case.status,
                          str(case.rev or "–"), cut(case.query, question_w), key=case.query_id)
        if self.shown:
            ids = [c.query_id for c in self.shown]
            table.move_cursor(row=ids.index(was.query_id) if was is not None and was.query_id in ids else 0)
        self._history()

    def _binned_rows(self) -> list[Case]:
        """A row for each open disagreement on a candidate the first reviewer binned (no
        case of the set: key `candidate:<id>`, the second side's slice, status binned)."""
        rows = []
        for key, d in self.disagreements.items():
            if d.query_id is None:  # a row only: `binned` is no status a case of the set has
                rows.append(Case.model_construct(query_id=key, query=d.query, slice=d.second.slice or "–",
                                                 status="binned", rev=0))  # type: ignore[arg-type]
        return rows

    def _case_row(self) -> Case | None:
        """The highlighted case; None (and why) on a binned candidate's row."""
        case = self._current()
        if case is not None and case.status == "binned":
            self._say("a binned candidate, no case yet: 1 confirms the bin, 2 keeps it as a case")
            return None
        return case

    def _in_view(self, case: Case) -> bool:
        if self.only == "disagreements":
            return case.query_id in self.disagreements
        if self.only == "stale":
            return case.query_id in self.stale
        return True

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
            empty = {"disagreements": "No open disagreements.", "stale": "No case labels a gone passage."}
            box.update(empty.get(self.only or "", "No cases match.") if self.cases else "No cases in this set yet.")
            return
        lines = [Content.from_markup("[b]$q[/b]\n[dim]$qid[/]\n", q=case.query, qid=case.query_id)]
        if (d := self.disagreements.get(case.query_id)) is not None:
            lines.append(_disagreement(d))
            if d.query_id is None:  # a binned candidate: no revisions to show
                lines.append(Content(f"{d.first.reviewer} binned it; 1 confirms the bin, 2 keeps it as a new case "
                                     f"with {d.second.reviewer}'s labels"))
                box.update(Content("\n").join(lines))
                return
        for label in self.stale.get(case.query_id, []):
            lines.append(Content.from_markup("[b]gone[/b] $what\n", what=label.describe()))
        for rev, action, reason in self.session.history(case.query_id):
            labels = ", ".join(f"{r.id} ({r.role[0]})" for r in rev.relevant) or (
                "negative" if rev.expect_empty else "–")
            lines.append(Content.from_markup(
                "[b]rev $rev[/b] $action · $who · $at\n  $reason\n  $slice: $labels\n",
                rev=str(rev.rev), action=action, who=rev.reviewer, at=rev.at, slice=rev.slice,
                reason=reason or "(added)", labels=labels,
            ))
        box.update(Content("\n").join(lines))

    def _say(self, text: str) -> None:
        self.query_one("#browser-message", Static).update(text)

    # ---- filters -----------------------------------------------------------------------

    def action_toggle_disagreements(self) -> None:
        self._toggle("disagreements", "open disagreements: 1 keeps the first review, 2 takes the second, "
                     "l relabels; d again shows every case")

    def action_toggle_stale(self) -> None:
        self._toggle("stale", "cases labelled with gone passages: l relabels with the old text beside the "
                     "current candidates; m again shows every case")

    def _toggle(self, only: str, note: str) -> None:
        if self.blind:
            return
        self.only = None if self.only == only else only
        self._fill()
        self._say(note if self.only else "every case")

    # ---- changes -----------------------------------------------------------------------

    def action_focus_filter(self) -> None:
        if not self.blind:
            self.query_one(Input).focus()

    def action_back(self) -> None:
        self.dismiss(None)

    def action_take_side(self, side: str) -> None:
        case = self._current()
        d = self.disagreements.get(case.query_id) if case is not None else None
        if case is None or d is None:
            self._say("1 and 2 settle a disagreement: d lists them")
            return
        chosen = d.first if side == "first" else d.second
        what = f"take {chosen.reviewer}'s side ({'retires the case' if chosen.decision == 'bin' else chosen.slice})"
        where = "changelog.jsonl"
        if d.query_id is None:
            what = (f"confirm {chosen.reviewer}'s bin" if chosen.decision == "bin"
                    else f"keep it as a case ({chosen.slice}, {chosen.reviewer}'s labels)")
            where = "judgments.jsonl" if chosen.decision == "bin" else where

        def got(note: str | None) -> None:
            if note:
                self._adjudicate(d, side, note)

        self.app.push_screen(TextModal(f"Why {what}? (recorded in {where} as adjudicated)",
                                       required=True, placeholder="reason", blink=self.blink), got)

    @work(thread=True, exclusive=True, group="browser-write", exit_on_error=False)
    def _adjudicate(self, d: Disagreement, side: str, note: str) -> None:
        from curator.adjudicate import take_side

        try:
            case = take_side(self.session, d, "first" if side == "first" else "second", note)
            if case is None:
                message = f"{d.target}: the bin confirmed (adjudicated)"
            elif d.query_id is None:
                message = f"{d.target} kept as {case.query_id} (adjudicated)"
            else:
                message = f"{case.query_id} rev {case.rev}: adjudicated"
        except CuratorError as exc:
            message = f"not saved: {exc.message}"
        except (OSError, sqlite3.Error) as exc:  # the app never dies on an I/O error
            message = f"not saved: {exc}"
        self.post_message(self._read(message))

    def action_relabel_case(self) -> None:
        case = self._case_row()
        if case is not None and not self.blind:
            self._open_revise(case, self.disagreements.get(case.query_id), self.stale.get(case.query_id, []))

    @work(thread=True, exclusive=True, group="browser-open", exit_on_error=False)
    def _open_revise(self, case: Case, d: Disagreement | None, stale: list[StaleLabel]) -> None:
        """The case on the card screen; its passages are read here, off the UI thread. A
        disagreement's relabel is recorded as adjudicated; a case with gone passages shows
        their old text beside the passages that hold their headings now."""
        from curator.adjudicate import Adjudicating, stale_card
        from curator.tui.screens.revise import ReviseScreen

        try:
            card = stale_card(self.session, case, stale) if stale else self.session.card_for_case(case)
        except (CuratorError, OSError) as exc:
            self.app.call_from_thread(self._say, f"could not open {case.query_id}: {exc}")
            return
        session = cast(ReviewSession, Adjudicating(self.session, d)) if d is not None else self.session
        screen = ReviseScreen(session, card, blink=self.blink)
        self.app.call_from_thread(self.app.push_screen, screen, self._revised)

    def _revised(self, saved: Case | None) -> None:
        if saved is not None:
            self._load(f"{saved.query_id} rev {saved.rev} saved")

    def action_edit_case(self) -> None:
        case = self._case_row()
        if case is None:
            return

        def got_text(text: str | None) -> None:
            if text and text != case.query:
                self._ask_reason(case, {"query": text}, "edit")

        self.app.push_screen(TextModal("Edit the question", case.query, blink=self.blink), got_text)

    def action_reslice_case(self) -> None:
        case = self._case_row()
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
        case = self._case_row()
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
        self.post_message(self._read(note))


def _disagreement(d: Disagreement) -> Content:
    """Both sides of a disagreement, for the history pane."""
    return Content.from_markup(
        "[b]disagreement[/b] ($what)\n  [b]1[/b] $first\n  [b]2[/b] $second\n",
        what=", ".join(d.differences), first=_side(d.first), second=_side(d.second),
    )


def _side(side: Side) -> str:
    if side.decision == "bin":
        return f"{side.reviewer}: bin"
    labels = ", ".join(f"{pid} (g{grade}{', p' if pid in side.primaries else ''})"
                       for pid, grade in side.grades.items()) or ("negative" if side.expect_empty else "–")
    return f"{side.reviewer}: keep · {side.slice} · {labels}"
