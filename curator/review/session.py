"""The review session: the queue, the decisions and their undo, without textual.

`curator review` (curator/tui) drives a `ReviewSession`; so can a script or a test. Each
decision is durable when its method returns: a keep is appended (and fsynced) to the
set's files by `QuestionSet.add` before the workspace records the decision, so a crash
between the two leaves a case whose candidate is still pending, which `reconcile()`
repairs on the next start (docs/review.md). Cards are built by `CardMaker`
(curator/review/card.py), ahead of time for the next few candidates (`prefetch_cards`).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from curator.errors import CuratorError
from curator.models import Candidate, CandidateIn, Case, Suggestion
from curator.review.card import Card, CardMaker, IncompleteCase, Row, refuse_incomplete
from curator.review.writes import (
    case_source,
    edited_source,
    previous_state,
    reconcile,
    same_labels,
    writing,
)
from curator.slicerules import slice_problems
from curator.suggest.pool import Pool
from curator.workspace import Workspace


@dataclass
class Step:
    """One decision on the undo stack."""

    action: str  # keep | bin | skip
    card: Card
    query_id: str | None = None
    retired_rev: int | None = None  # an undo whose retiring rev was written (then retried)


@dataclass
class Stats:
    reviewed: int = 0
    kept: int = 0
    binned: int = 0
    skipped: int = 0
    remaining: int = 0  # reviewable, not counting the card on screen
    showing: int = 0  # 1 while a card is on screen
    started: float = field(default_factory=time.monotonic)
    write_ms: list[float] = field(default_factory=list)  # each keep's durable write
    per_slice: dict[str, int] = field(default_factory=dict)  # active cases in the set
    targets: dict[str, int] = field(default_factory=dict)

    @property
    def keep_rate(self) -> float | None:
        decided = self.kept + self.binned
        return self.kept / decided if decided else None

    @property
    def per_minute(self) -> float:
        minutes = max((time.monotonic() - self.started) / 60, 1 / 60)
        return self.reviewed / minutes

    @property
    def queue(self) -> int:
        return self.reviewed + self.showing + self.remaining


class ReviewSession:
    """A reviewer working through the candidate queue of one question set."""

    blind = False  # a blind second pass (curator.secondpass) keeps the set browser closed

    def __init__(
        self,
        ws: Workspace,
        *,
        set_name: str | None = None,
        reviewer: str | None = None,
        source: str = "all",
        slice: str | None = None,
        prefetch: int = 3,
    ):
        if source not in ("all", "logs", "log", "generated", "manual", "triage"):
            raise CuratorError(f"unknown source {source!r}: expected logs, generated or all")
        if slice is not None and slice not in ws.config.slices:
            raise CuratorError(
                f"unknown slice {slice!r}", f"Configured slices: {', '.join(ws.config.slices)}."
            )
        self.ws = ws
        self.set_name = set_name or ws.config.default_set
        self.reviewer = reviewer or ws.config.reviewer_name
        # Leases belong to this running session, not to the name: two terminals of the same
        # reviewer are never served the same card.
        self.session_id = secrets.token_hex(4)
        self.lease_owner = f"{self.reviewer}@{self.session_id}"
        self.source = source
        self.slice_filter = slice
        self.prefetch = prefetch
        self.qs = ws.question_set(self.set_name)
        self.slices = list(ws.config.slices)
        self.undo_stack: list[Step] = []
        self._queue: list[Candidate] = []  # leased, not yet shown
        self._shown: set[int] = set()  # candidates served this session (never re-served)
        self._cards: dict[int, Card] = {}  # prepared cards by candidate id
        self._held: set[int] = set()  # leased to this session and not decided yet
        self.cards = CardMaker(ws)  # reads on its own connection once the session starts
        self._lock = threading.RLock()
        self.stats = Stats(targets={n: s.target for n, s in ws.config.slices.items()})
        self.reconciled: list[str] = []
        self._kept_from: dict[int, str] = {}  # candidate id -> query_id of its active case
        self._failed_keeps: set[int] = set()  # a keep whose write failed: retry finishes it

    # ---- start and stop ------------------------------------------------------------------

    def start(self) -> None:
        """Repair crash leftovers, count the set's cases and the queue."""
        if self.qs.exists():
            with self.qs.locked():  # finishes an append a crash interrupted
                pass
        self.reconciled = reconcile(self.ws, self.set_name)
        self.cards.open()
        self._count_set()
        self.stats.remaining = self._remaining()

    def close(self) -> None:
        """Give back every lease this session still holds."""
        with self._lock:
            for cid in sorted(self._held):
                self.ws.release(cid, self.lease_owner)
            self._held.clear()
            self._queue.clear()
            self.cards.close()

    def _count_set(self) -> None:
        per_slice = dict.fromkeys(self.slices, 0)
        kept_from: dict[int, str] = {}
        if self.qs.exists():
            for case in self.qs.read().cases.values():
                if case.status == "active":
                    per_slice[case.slice] = per_slice.get(case.slice, 0) + 1
                    if case.source.candidate_id is not None:
                        kept_from[case.source.candidate_id] = case.query_id
        self.stats.per_slice = per_slice
        self._kept_from = kept_from

    def _remaining(self) -> int:
        return self.ws.count_reviewable(
            self.lease_owner, source_kind=self.source, slice=self.slice_filter, exclude=self._shown
        )  # the queued (prefetched) cards are leased to this session: counted already

    # ---- the queue -----------------------------------------------------------------------

    def _refill(self, target: int) -> None:
        """Lease up to `target` queued candidates (the prefetch window, kept small so
        other reviewers are not starved)."""
        want = target - len(self._queue)
        if want <= 0:
            return
        leased = self.ws.lease_next(
            self.lease_owner,
            n=want,
            source_kind=self.source,
            slice=self.slice_filter,
            states=("pending", "skipped"),
            exclude=self._shown | {c.id for c in self._queue},
        )
        self._queue.extend(leased)
        self._held.update(c.id for c in leased)

    def next_card(self) -> Card | None:
        """The next candidate's card (leased to this reviewer), or None when the queue is empty."""
        with self._lock:
            if not self._queue:
                self._refill(max(1, self.prefetch))
            if not self._queue:
                self.stats.remaining = self.stats.showing = 0
                return None
            cand = self._queue.pop(0)
            self._shown.add(cand.id)
            self.stats.remaining = max(0, self.stats.remaining - 1)
            self.stats.showing = 1
            card = self._cards.pop(cand.id, None)
        # Not prefetched yet (the reviewer outran the prefetch): build it now.
        return card or self.new_card(cand)

    def new_card(self, cand: Candidate) -> Card:
        """The candidate's card, with its suggested slice's defaults (`CardMaker.for_candidate`)."""
        return self.cards.for_candidate(cand)

    def add_question(self, text: str) -> Card:
        """A question typed in place by the reviewer: queued as a manual candidate, leased
        to this session and returned as a card. Refused when the same question (normalised)
        is queued already."""
        text = " ".join(text.split())
        if not text:
            raise CuratorError("the new question is empty")
        with self._lock:
            added = writing(lambda: self.ws.add_candidates(
                [CandidateIn(query=text, source_kind="manual", provenance={"typed_by": self.reviewer})]))
            if not added.added:
                cand = self.ws.candidate(added.existing[0])
                state = cand.state if cand else "queued"
                raise CuratorError(f"that question is already a candidate (#{added.existing[0]}, {state})")
            cid = added.added[0]
            writing(lambda: self.ws.lease_candidate(cid, self.lease_owner))
            self._held.add(cid)
            self._shown.add(cid)
            self.stats.showing = 1
            cand = self.ws.candidate(cid)
            assert cand is not None
        return self.new_card(cand)

    def requeue(self, card: Card) -> None:
        """Put a card that was on screen back at the front of the queue (undo shows an
        earlier card first); it stays leased to this reviewer."""
        if card.candidate is None:
            return
        with self._lock:
            self._shown.discard(card.candidate.id)
            self._queue.insert(0, card.candidate)
            self.stats.remaining += 1  # off the screen, back in the queue
            self._cards[card.candidate.id] = card

    def prefetch_cards(self) -> None:
        """Lease and prepare the next cards (suggestions, passage texts) so moving on is
        instant; also recounts the queue. Runs in the background after a card shows."""
        with self._lock:
            self._refill(self.prefetch)
            self.stats.remaining = self._remaining()
            upcoming = [c for c in self._queue[: self.prefetch] if c.id not in self._cards]
        for cand in upcoming:
            card = self.new_card(cand)
            with self._lock:
                self._cards[cand.id] = card

    def upcoming(self) -> Card | None:
        """The card `next_card` will return next, if it is prepared already (else None)."""
        with self._lock:
            return self._cards.get(self._queue[0].id) if self._queue else None

    # ---- rows, read through the card maker -----------------------------------------------

    @property
    def reader(self) -> Workspace:
        return self.cards.reader

    @property
    def pool(self) -> Pool:
        return self.cards.pool

    def pooled_rows(self, query: str, own: list[Suggestion], query_id: str | None = None) -> list[Row]:
        return self.cards.pooled_rows(query, own, query_id)

    def search_rows(self, text: str, reason: str = "search") -> list[Row]:
        return self.cards.search_rows(text, reason)

    def add_search(self, card: Card, text: str) -> list[Row]:
        """The reviewer's own search, its hits at the top of the card (`CardMaker.add_search`)."""
        return self.cards.add_search(card, text)

    # ---- decisions -----------------------------------------------------------------------

    def keep(self, card: Card) -> Case:
        """Append the case to the set (fsynced), then record the keep. Raises IncompleteCase
        (the card or its slice's rule), CuratorError (the candidate has an active case
        already) or WriteFailed (then the same keep may be retried: a case whose line did
        reach the file is not written twice)."""
        refuse_incomplete(card, "not kept")
        cand = card.candidate
        assert cand is not None
        with self._lock:
            started = time.perf_counter()
            case = self._retried_keep(cand.id) if cand.id in self._failed_keeps else None
            if case is None:
                self._refuse_second_case(cand)
                data = {**card.case_fields(), "source": case_source(card, cand)}
                self._failed_keeps.add(cand.id)
                case = writing(lambda: self.qs.add(data, reviewer=self.reviewer, versions=self.ws.versions()))
            writing(lambda: self.ws.decide(
                cand.id, "keep", self.reviewer, state="kept", set_name=self.set_name,
                query_id=case.query_id, detail={"rev": case.rev},
            ))
            self._failed_keeps.discard(cand.id)
            self._kept_from[cand.id] = case.query_id
            self.stats.write_ms.append((time.perf_counter() - started) * 1000)
            self.undo_stack.append(Step("keep", card, case.query_id))
            self._held.discard(cand.id)
            self.stats.reviewed += 1
            self.stats.kept += 1
            self.stats.per_slice[case.slice] = self.stats.per_slice.get(case.slice, 0) + 1
        return case

    def _retried_keep(self, candidate_id: int) -> Case | None:
        """After a failed keep: finish the append the failure interrupted (its journal), and
        return the case if its line reached the file (None: nothing was written)."""
        def finish() -> None:
            with self.qs.locked():
                pass

        writing(finish)
        if not self.qs.exists():
            return None
        for case in self.qs.read().cases.values():
            if case.status == "active" and case.source.candidate_id == candidate_id:
                return case
        return None

    def _refuse_second_case(self, cand: Candidate) -> None:
        """One case per candidate: refuse a keep of a candidate that has an active case
        (kept in another session, or in this one before)."""
        query_id = self._kept_from.get(cand.id)
        now = self.ws.candidate(cand.id)
        if query_id is None and now is not None and now.state == "kept":
            query_id = now.query_id
        if query_id is not None:
            raise CuratorError(
                f"not kept: candidate #{cand.id} already has an active case, {query_id}; "
                "change it in the set browser (b), or bin this card (x)"
            )

    def bin(self, card: Card) -> None:
        self._drop(card, "bin", "binned")

    def skip(self, card: Card) -> None:
        """Later: the candidate goes back to the queue behind every pending one."""
        self._drop(card, "skip", "skipped")

    def _drop(self, card: Card, action: str, state: str) -> None:
        assert card.candidate is not None
        cid = card.candidate.id
        with self._lock:
            writing(lambda: self.ws.decide(cid, action, self.reviewer, state=state))
            self.undo_stack.append(Step(action, card))
            self._held.discard(card.candidate.id)
            self.stats.reviewed += 1
            if action == "bin":
                self.stats.binned += 1
            else:
                self.stats.skipped += 1

    def undo(self) -> Card | None:
        """Take back the last decision of this session and return its card to show again;
        once this session's are all undone, this reviewer's last one from earlier sessions.

        A keep is taken back by appending a retiring revision with reason "undo" (the files
        stay append-only); the candidate returns to pending, leased to this reviewer."""
        with self._lock:
            if not self.undo_stack:
                return self._undo_earlier()
            step = self.undo_stack[-1]  # popped once every write of the undo is done
            cand = step.card.candidate
            assert cand is not None
            detail: dict[str, Any] = {"undid": step.action}
            if step.action == "keep" and step.query_id:
                query_id = step.query_id
                if step.retired_rev is None:  # not written by an earlier, failed try
                    retired = writing(lambda: self.qs.retire(
                        query_id, reason="undo", reviewer=self.reviewer, versions=self.ws.versions()))
                    step.retired_rev = retired.rev
                    self._kept_from.pop(cand.id, None)
                    self.stats.per_slice[retired.slice] = max(0, self.stats.per_slice.get(retired.slice, 1) - 1)
                detail.update(query_id=query_id, rev=step.retired_rev)
            self._reopen(cand.id, detail)
            self.undo_stack.pop()
            if step.action == "keep":
                self.stats.kept -= 1
            elif step.action == "bin":
                self.stats.binned -= 1
            else:
                self.stats.skipped -= 1
            self.stats.reviewed -= 1
            return step.card

    def _undo_earlier(self) -> Card | None:
        """Undo this reviewer's latest decision that still stands (the candidate's last one),
        as recorded in the workspace: a decision of an earlier session."""
        decisions = self.ws.decisions()
        last = {d.candidate_id: d for d in decisions}
        standing = (d for d in reversed(decisions) if d.reviewer == self.reviewer
                    and d.action in ("keep", "bin", "skip") and last[d.candidate_id] is d)
        decision = next(standing, None)
        if decision is None:
            return None
        cand = self.ws.candidate(decision.candidate_id)
        assert cand is not None
        detail: dict[str, Any] = {"undid": decision.action, "earlier_session": True}
        if decision.action == "keep" and decision.query_id:
            qs = self.ws.question_set(decision.set_name or self.set_name)
            case = qs.latest_rev(decision.query_id)
            if case is None or case.status != "active" or case.rev != decision.detail.get("rev", case.rev):
                raise CuratorError(
                    f"{decision.query_id} was changed after it was kept; change or retire it "
                    "in the set browser (b)"
                )
            query_id = decision.query_id
            retired = writing(lambda: qs.retire(query_id, reason="undo", reviewer=self.reviewer,
                                                 versions=self.ws.versions()))
            detail.update(query_id=decision.query_id, rev=retired.rev)
            card = self.card_for_case(case)  # back with the labels it was kept with
            card.candidate, card.case = cand, None
            self._count_set()
        else:
            card = self.new_card(cand)
        self._shown.add(cand.id)  # on screen now: not served again by the queue
        self._reopen(cand.id, detail)
        return card

    def _reopen(self, candidate_id: int, detail: dict[str, Any]) -> None:
        """Record the undo and put the candidate back (pending, or skipped if it was),
        leased to this reviewer."""
        state = previous_state(self.ws, candidate_id)
        writing(lambda: self.ws.decide(candidate_id, "undo", self.reviewer, state=state, detail=detail))
        if self.ws.lease_candidate(candidate_id, self.lease_owner):
            self._held.add(candidate_id)
        self.stats.remaining = self._remaining()
        self.stats.showing = 1  # the undone card comes back on screen

    # ---- the set browser -----------------------------------------------------------------

    def cases(self) -> list[Case]:
        return list(self.qs.read().cases.values()) if self.qs.exists() else []

    def history(self, query_id: str) -> list[tuple[Case, str, str]]:
        """Every rev of a case with its change-log action and reason, oldest first."""
        reasons = {entry.rev: (entry.action, entry.reason) for entry in self.qs.changes(query_id)}
        return [(case, *reasons.get(case.rev, ("?", ""))) for case in self.qs.revisions(query_id)]

    def card_for_case(self, case: Case) -> Card:
        """A card to relabel an existing case: its labelled passages, then search results."""
        return self.cards.for_case(case)

    def save_case(self, card: Card, reason: str) -> Case:
        """Append the card's labels as the case's next rev. The change-log action is `edit`
        when the question text changed, `reslice` when only the slice did, else `relabel`."""
        assert card.case is not None
        refuse_incomplete(card, "not saved")
        old = card.case
        changes = card.case_fields()
        if changes["query"] != old.query:
            action = "edit"
        elif changes["slice"] != old.slice and same_labels(old, changes):
            action = "reslice"
        else:
            action = "relabel"
        return self.revise(old.query_id, changes, action=action, reason=reason)

    def revise(self, query_id: str, changes: dict[str, Any], *, action: str, reason: str) -> Case:
        """Append rev+1 of a case. A changed question text records the original text and its
        provenance (`source.kind = "edited"`); a change that would break the slice's rule
        (curator.slicerules) is refused; an edit of the text or a retire never is."""
        if not reason.strip():
            raise CuratorError("a reason is required for every change to a kept case")

        def change(latest: Case) -> dict[str, Any]:
            updates = dict(changes)
            if "query" in updates and updates["query"] != latest.query:
                updates["source"] = edited_source(latest)
            if action in ("reslice", "relabel"):
                after = {**latest.model_dump(), **updates}
                if problems := slice_problems(after):
                    raise IncompleteCase(f"not saved: {query_id}: " + "; ".join(problems))
            return updates

        with self._lock:
            case = writing(lambda: self.qs.revise(
                query_id, change, action=action, reason=reason.strip(),  # type: ignore[arg-type]
                reviewer=self.reviewer, versions=self.ws.versions(),
            ))
            self._count_set()
        return case


