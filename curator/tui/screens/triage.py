"""`curator triage`: one failing case of a run per card; a key per cause (one write at a
time, as every `DecidingScreen`)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Footer, OptionList, Static

from curator.errors import CuratorError
from curator.triage import CAUSES, TriageItem, TriageSession
from curator.tui.crash import ReportingApp
from curator.tui.screens.deciding import (
    APP_KEYS,
    BREAKPOINTS,
    DecidingScreen,
    failure_reason,
    own_bindings,
)
from curator.tui.widgets.lines import Lines
from curator.tui.widgets.triage_card import CauseKeys, EarlierRuns, ResultList, TriageFacts

if TYPE_CHECKING:
    from curator.workspace import Workspace

CAUSE_HELP = {
    "bad_label": "Bad label: save the labels changed on this card (p/o/c) as a relabel rev",
    "missing_chunk": "Missing chunk: the answer is not a passage of the index; tag regression",
    "synonym_gap": "Synonym gap: the question's words are not the passage's; tag regression",
    "stale_metadata": "Stale metadata: re-pin the highlighted labelled passage (else the pinned ones) "
    "to the corpus's current revision",
    "ranking_tie": "Ranking tie: the answer lost a tie-break; tag regression",
    "retrieval_miss": "Real retrieval miss: keep the case as it is and tag regression",
}


def _cause_bindings() -> list[Binding]:
    return [
        Binding(str(i), f"name_cause('{cause}')", label, show=False, id=f"cause-{cause.replace('_', '-')}",
                tooltip=CAUSE_HELP[cause])
        for i, (cause, label) in enumerate(CAUSES.items(), 1)
    ]


class TriageScreen(DecidingScreen[TriageItem]):
    BINDINGS = [
        *_cause_bindings(),
        Binding("p", "mark_primary", "primary", id="primary", tooltip="Mark the highlighted result primary"),
        Binding("o", "mark_secondary", "secondary", id="secondary",
                tooltip="Mark the highlighted result secondary (acceptable)"),
        Binding("c", "clear_label", "clear", id="clear", tooltip="Clear the highlighted result's label"),
        Binding("w", "write_note", "note", id="triage-note", tooltip="Write a short note for the decision"),
        Binding("s", "skip_item", "skip", id="skip", tooltip="Skip for later: it comes back after the others"),
        Binding("u", "undo_decision", "undo", id="undo",
                tooltip="Undo the last decision (appends a rev restoring the case)"),
        Binding("question_mark", "show_help", "help", id="help", tooltip="List every key"),
        Binding("q", "quit_app", "quit", id="quit", tooltip="Quit"),
    ]

    @dataclass
    class ItemReady(Message):
        item: TriageItem | None
        note: str = ""

    class EarlierReady(Message):
        """Every item's earlier runs are loaded."""

    @dataclass
    class PreviewReady(Message):
        index: int
        passage_id: str
        text: Content

    def __init__(self, session: TriageSession, blink: bool = True):
        super().__init__(session.ws.config.keymap, blink)
        self.session = session
        self.note = ""
        self.earlier_started = False

    def help_sections(self) -> list[tuple[str, list[Binding]]]:
        return [("triage card", own_bindings(TriageScreen)), APP_KEYS]

    def compose(self) -> ComposeResult:
        yield Static(id="triage-stats")
        with Vertical(id="triage-card"):
            yield Static("Loading the run…", id="question")
            yield TriageFacts(id="triage-facts")
            yield EarlierRuns(id="triage-earlier")
        with Horizontal(id="body"):
            yield ResultList(id="results")
            with VerticalScroll(id="preview-box"):
                yield Static(id="preview")
        yield CauseKeys(id="triage-causes")
        yield Lines(id="message")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(ResultList).focus()
        self.query_one(CauseKeys).show(self._cause_keys())
        self.post_message(self.ItemReady(self.session.next_item()))

    def _cause_keys(self) -> dict[str, str]:
        return {b.id.removeprefix("cause-").replace("-", "_"): self.keymap.get(b.id, b.key)
                for b in own_bindings(TriageScreen) if b.id and b.id.startswith("cause-")}

    # ---- workers -----------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="decide", exit_on_error=False)
    def _decide(self, item: TriageItem, cause: str, note: str, revision: str | None, passage: str | None) -> None:
        try:
            decision = self.session.decide(item, cause, note=note, revision=revision, passage=passage)
        except CuratorError as exc:
            self.post_message(self.DecisionFailed(exc.message))
            return
        except (OSError, sqlite3.Error) as exc:  # the app never dies on an I/O error
            self.post_message(self.DecisionFailed(f"not saved: {failure_reason(exc)}; the same key retries"))
            return
        done = f"{item.query_id}: {CAUSES[cause]}"
        done += f", rev {decision.rev} appended" if decision.rev else " recorded (already tagged regression)"
        self.post_message(self.ItemReady(self.session.next_item(), done))

    @work(thread=True, exclusive=True, group="decide", exit_on_error=False)
    def _undo(self) -> None:
        try:
            item = self.session.undo()
        except CuratorError as exc:
            self.post_message(self.DecisionFailed(exc.message))
            return
        except (OSError, sqlite3.Error) as exc:
            self.post_message(self.DecisionFailed(f"not undone: {failure_reason(exc)}; u retries"))
            return
        if item is None:
            self.post_message(self.DecisionFailed("nothing to undo"))
            return
        self.post_message(self.ItemReady(item, f"undone: {item.query_id} is back as it was"))

    @work(thread=True, exclusive=True, group="earlier", exit_on_error=False)
    def _load_earlier(self) -> None:
        self.session.load_earlier()
        self.post_message(self.EarlierReady())

    @work(thread=True, group="preview", exit_on_error=False)  # not exclusive: a late preview for another row is ignored
    def _load_preview(self, index: int, passage_id: str, revision: str | None) -> None:
        passage = self.session.ws.passage(passage_id, revision) or self.session.ws.passage(passage_id)
        if passage is None:
            text = Content.from_markup("[b]$id[/b]\n[$error]not in the corpus[/]", id=passage_id)
        else:
            note = "" if revision in (None, passage.revision) else f" (run returned {revision[:12]})"
            text = Content.from_markup(
                "[b]$id[/b]\n[dim]revision $rev$note$current[/]\n$heading\n\n", id=passage.id,
                rev=passage.revision[:12], note=note, heading=passage.heading,
                current="" if passage.is_current else " · not current",
            ) + Content(passage.text)
        self.post_message(self.PreviewReady(index, passage_id, text))

    # ---- messages ----------------------------------------------------------------------

    @on(ItemReady)
    def show_item(self, message: ItemReady) -> None:
        if not self.earlier_started:
            # After the first card is drawn: reading earlier runs holds the GIL for a while.
            self.earlier_started = True
            self.call_after_refresh(self._load_earlier)
        self.busy = False
        self.current = message.item
        self.note = ""
        self._stats()
        self._say(message.note)
        if message.item is None:
            self.query_one("#question", Static).update(Content("Nothing left to triage in this run."))
            self.query_one(TriageFacts).update(Content.from_markup(
                "[dim]`curator triage --summary` prints the causes; `curator score --rescore latest` "
                "recomputes the metrics with the new labels.[/]"))
            self.query_one(EarlierRuns).update("")
            self.query_one(ResultList).clear_options()
            self.query_one("#preview", Static).update("")
            return
        item = message.item
        self.query_one("#question", Static).update(Content(item.case.query if item.case else item.query_id))
        self._facts()
        self.query_one(EarlierRuns).show(item)
        self.query_one(ResultList).show_item(item)
        self._preview(0)

    @on(EarlierReady)
    def earlier_ready(self, _message: EarlierReady) -> None:
        if self.current is not None:
            self.query_one(EarlierRuns).show(self.current)

    @on(PreviewReady)
    def preview_ready(self, message: PreviewReady) -> None:
        index = self.query_one(ResultList).highlighted
        item = self.current
        if item is not None and index == message.index and index < len(item.results) \
                and item.results[index].id == message.passage_id:
            self.query_one("#preview", Static).update(message.text)
            self.query_one("#preview-box", VerticalScroll).scroll_home(animate=False)

    @on(OptionList.OptionHighlighted)
    def highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._preview(event.option_index)

    # ---- actions -----------------------------------------------------------------------

    def action_name_cause(self, cause: str) -> None:
        if (item := self._ready()) is None:
            return
        revision = passage = None
        if cause == "stale_metadata":
            index = self.query_one(ResultList).highlighted
            labelled = set(item.current_labels())
            if index is not None and index < len(item.results) and item.results[index].id in labelled:
                passage = item.results[index].id  # re-pinned to the corpus's current revision, never the shown one
        self.busy = True
        self._decide(item, cause, self.note, revision, passage)

    def _label(self, role: str | None) -> None:
        if (item := self._ready()) is None:
            return
        results = self.query_one(ResultList)
        index = results.highlighted
        if index is None or not item.results:
            self._say("no result highlighted", error=True)
            return
        self.session.mark(item, item.results[index].id, role)
        results.refresh_results(item)
        self._facts()
        self._say("labels changed: 1 saves them as a bad label fix" if item.edited else "")

    def action_write_note(self) -> None:
        if self._ready() is not None:
            self._ask("Note for this decision (optional)", self.note, self._set_note)

    def _set_note(self, text: str) -> None:
        self.note = text
        self._facts()

    def action_skip_item(self) -> None:
        if (item := self._ready()) is None:
            return
        self.session.skip(item)
        nxt = self.session.next_item()
        self.post_message(self.ItemReady(nxt, "skipped for later" if nxt is not item else "the only card left"))

    def action_undo_decision(self) -> None:
        if self.busy:
            self.app.bell()
            return
        self.busy = True  # with nothing to undo, the worker says so
        self._undo()

    # ---- drawing -----------------------------------------------------------------------

    def _facts(self) -> None:
        if self.current is not None:
            self.query_one(TriageFacts).show(self.current, self.note)

    def _stats(self) -> None:
        s = self.session
        label = f" ({s.artefact['label']})" if s.artefact.get("label") else ""
        decided = len(s.items) - len([i for i in s.items if i.decision is None])
        self.query_one("#triage-stats", Static).update(Content.from_markup(
            "[b]triage[/b] $run$label · set [b]$set[/b] · $who · $left left · $done of $all decided",
            run=s.run, label=label, set=s.qs.name, who=s.reviewer, left=str(s.remaining),
            done=str(decided), all=str(len(s.items)),
        ))

    def _preview(self, index: int | None) -> None:
        item = self.current
        if item is None or index is None or not (0 <= index < len(item.results)):
            self.query_one("#preview", Static).update("")
            return
        result = item.results[index]
        self._load_preview(index, result.id, result.revision)


class TriageApp(ReportingApp):
    """The review app's look and keymap, on one run's failures."""

    CSS_PATH = Path(__file__).parent.parent / "curator.tcss"
    TITLE = "curator triage"
    command = "triage"
    ENABLE_COMMAND_PALETTE = False
    HORIZONTAL_BREAKPOINTS = BREAKPOINTS
    CSS = """
    #triage-stats { height: 1; padding: 0 1; background: $panel; }
    #triage-card { height: auto; padding: 0 1; }
    #triage-facts { height: auto; max-height: 9; }
    #triage-earlier { height: auto; max-height: 2; }
    #results { width: 3fr; height: 1fr; border: round $primary 50%; }
    TriageScreen #preview-box { width: 2fr; }
    #results:focus { border: round $primary; }
    #triage-causes { height: auto; max-height: 2; padding: 0 1; }
    TriageScreen.-narrow #body { layout: vertical; }
    TriageScreen.-narrow #results { height: 1fr; width: 100%; }
    TriageScreen.-narrow #preview-box { height: 1fr; width: 100%; min-height: 4; }
    """

    def __init__(self, ws: Workspace, run: str | Path | dict[str, Any] | None = None, *, reviewer: str | None = None,
                 include_decided: bool = False, blink: bool = True):
        super().__init__()
        self.ws = ws
        # Earlier runs are loaded by the screen in a worker, after the first card shows.
        self.session = TriageSession(ws, run, reviewer=reviewer, include_decided=include_decided, earlier=False)
        self.blink = blink

    def on_mount(self) -> None:
        self.set_keymap(dict(self.ws.config.keymap))
        self.push_screen(TriageScreen(self.session, blink=self.blink))

