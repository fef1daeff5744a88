"""TriageSession: the queue of one run's failures and the decisions taken on them,
without textual (the app and the tests drive the same object)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.models import Case, utcnow
from curator.triage import causes
from curator.triage.items import TriageItem, earlier_runs, failures, load_artefact, run_name, set_of
from curator.triage.store import Decision, mark_undone, record

if TYPE_CHECKING:
    from curator.workspace import Workspace


class _Unchanged(Exception):
    """The case already has what the decision would give it: record the cause only."""

    def __init__(self, case: Case):
        super().__init__(case.query_id)
        self.case = case


class TriageSession:
    """The queue of one run's failures and the decisions taken on them."""

    def __init__(
        self,
        ws: Workspace,
        run: str | Path | dict[str, Any] | None = None,
        *,
        reviewer: str | None = None,
        include_decided: bool = False,
        earlier: bool = True,
    ):
        self.ws = ws
        self.artefact = run if isinstance(run, dict) else load_artefact(ws, run)
        self.run = run_name(self.artefact)
        self.qs = set_of(ws, self.artefact)
        self.reviewer = reviewer or ws.config.reviewer_name
        self.items = failures(ws, self.artefact, earlier=earlier)
        self.queue = [i for i in self.items if include_decided or i.decision is None]
        self.undo_stack: list[tuple[Decision, TriageItem]] = []
        self._lock = threading.RLock()

    @property
    def remaining(self) -> int:
        return len(self.queue)

    def load_earlier(self) -> None:
        """Fill every item's earlier runs (slow with many big stored runs: the app calls it
        in a worker after the first card shows)."""
        found = earlier_runs(self.ws, self.artefact, [i.query_id for i in self.items])
        for item in self.items:
            item.earlier = found[item.query_id]

    def next_item(self) -> TriageItem | None:
        return self.queue[0] if self.queue else None

    def mark(self, item: TriageItem, passage_id: str, role: str | None) -> None:
        """Stage a label change on the card (saved by the `bad_label` decision)."""
        if role is None:
            item.labels.pop(passage_id, None)
        elif role in ("primary", "secondary"):
            item.labels[passage_id] = role
        else:
            raise ValueError(f"role must be primary, secondary or None, got {role!r}")
        item.mark_results()

    def skip(self, item: TriageItem) -> None:
        """Send the card to the back of the queue; nothing is recorded."""
        with self._lock:
            if item in self.queue:
                self.queue.remove(item)
                self.queue.append(item)

    def decide(
        self,
        item: TriageItem,
        cause: str,
        *,
        note: str = "",
        revision: str | None = None,
        passage: str | None = None,
        confirm_older: bool = False,
    ) -> Decision:
        """Name the cause and act: relabel (bad_label), re-pin (stale_metadata; `revision`
        default: the corpus's current one; an older one needs `confirm_older`) or tag `regression` (the others)."""
        if cause not in causes.CAUSES:
            raise CuratorError(f"unknown cause {cause!r}; expected one of {', '.join(causes.CAUSES)}")
        action = causes.ACTION_OF[cause]
        if action != "relabel" and item.edited:
            raise CuratorError("the labels on this card were changed: save them with bad label, or clear the changes")
        if action == "relabel" and not item.edited:
            raise CuratorError("bad label: change the labels first (p primary, o secondary, c clear)")

        def change(case: Case) -> dict[str, Any]:
            if case.status != "active":
                raise CuratorError(f"{item.query_id} is no longer an active case of set {self.qs.name!r}")
            if action == "relabel":
                return causes.relabel(item.labels, case)
            if action == "repin":
                return causes.repin(self.ws, case, revision, passage, confirm_older)
            tagged = causes.tag_regression(case)
            if tagged is None:
                raise _Unchanged(case)  # already held by the next freeze
            return tagged

        with self._lock:
            try:
                case = self.qs.revise(
                    item.query_id, change, action="edit" if action == "regression" else "relabel",
                    reason=causes.reason(cause, note, self.run), reviewer=self.reviewer, versions=self.ws.versions(),
                )
                rev: int | None = case.rev
            except _Unchanged as unchanged:
                case, rev = unchanged.case, None
            decision = self._record(item, cause, note.strip(), action, rev)
            self._refresh(item, case)
            item.decision = decision
            self.undo_stack.append((decision, item))
            if item in self.queue:
                self.queue.remove(item)
            return decision

    def undo(self) -> TriageItem | None:
        """Take back this session's last decision: append a rev restoring the labels, pins
        and tags it changed, record an `undo` row, and put the card back at the front."""
        with self._lock:
            if not self.undo_stack:
                return None
            decision, item = self.undo_stack.pop()
            rev = None
            if decision.rev is not None:
                history = self.qs.revisions(decision.query_id)
                before = next((c for c in history if c.rev == decision.rev - 1), None)
                latest = history[-1] if history else None
                if before is None or latest is None:
                    raise CuratorError(f"{decision.query_id}: cannot find rev {decision.rev - 1} to restore")
                revised = self.qs.revise(
                    decision.query_id, causes.undo_change(decision.action, before, latest),
                    action="relabel" if decision.action != "regression" else "edit",
                    reason=f"undo triage {decision.cause} ({self.run})", reviewer=self.reviewer,
                    versions=self.ws.versions(),
                )
                rev = revised.rev
                self._refresh(item, revised)
            undo = self._record(item, decision.cause, "", "undo", rev)
            mark_undone(self.ws, decision, undo)
            item.decision = None
            if item in self.queue:
                self.queue.remove(item)
            self.queue.insert(0, item)
            return item

    def _record(self, item: TriageItem, cause: str, note: str, action: str, rev: int | None) -> Decision:
        return record(self.ws, Decision(
            id=0, run=self.run, set_name=self.qs.name, query_id=item.query_id, slice=item.slice,
            failure=item.failure, cause=cause, note=note, action=action, rev=rev, reviewer=self.reviewer,
            at=utcnow(),
        ))

    def _refresh(self, item: TriageItem, case: Case) -> None:
        item.case = case
        item.labels = {r.id: r.role for r in case.relevant}
        item.mark_results()
