"""The review session: the queue, the labels being built, and every decision, without textual.

`curator review` (curator/tui) drives a `ReviewSession`; so can a script or a test. Each
decision is durable when its method returns: a keep is appended (and fsynced) to the
set's files by `QuestionSet.add` before the workspace records the decision, so a crash
between the two leaves a case whose candidate is still pending, which `reconcile()`
repairs on the next start (docs/review.md).
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from curator.errors import CuratorError
from curator.models import GRADE_FOR_ROLE, Candidate, CandidateIn, Case, Suggestion
from curator.slicerules import slice_problems
from curator.suggest.pool import Pool
from curator.workspace import Workspace

SNIPPET_CHARS = 160
T = TypeVar("T")


class IncompleteCase(CuratorError):
    """Keep was refused: the case lacks a slice, a primary passage or the negative mark."""


class WriteFailed(CuratorError):
    """A decision could not be written (disk full, permission denied, read-only file
    system): nothing of it stands half-done, and the same call may be retried."""


# What to press to satisfy each slice's rule (curator.slicerules), shown after the reason.
SLICE_HINTS = {
    "multi_hop": "p on two or more passages, r requires them all",
    "freshness": "f pins the revision shown, a sets a max age",
    "negative": "n marks the question negative",
}


@dataclass
class Row:
    """One passage offered as a label: from the candidate itself or from search."""

    id: str
    revision: str
    heading: str = ""
    title: str = ""
    snippet: str = ""  # may hold HL_START / HL_END marks around matched words
    reason: str = "search"  # clicked, hit, generated from, search, your search, labelled
    text: str = ""  # the passage's full text, for the preview pane
    committed_at: str | None = None
    missing: bool = False  # named by the candidate but absent from the corpus
    # (source, rank) of each source that proposed it: clicked, hit, bm25, dense, run:<file>,
    # your search (docs/review.md, "Suggestions")
    sources: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Card:
    """A candidate (or, in the set browser, an existing case) and the labels being built."""

    candidate: Candidate | None
    query: str
    rows: list[Row]
    slice: str | None = None
    labels: dict[str, str] = field(default_factory=dict)  # passage id -> primary | secondary
    grades: dict[str, int] = field(default_factory=dict)  # passage id -> grade set by hand
    expect_empty: bool = False
    require_all: bool = False
    pinned: bool = False  # pin primaries to the revision shown
    max_age_days: int | None = None
    max_rank: int | None = None  # the first primary must rank at or above this
    explanation: str = ""
    tags: list[str] = field(default_factory=list)
    case: Case | None = None  # set when the card revises an existing case

    def row(self, passage_id: str) -> Row | None:
        return next((r for r in self.rows if r.id == passage_id), None)

    def set_label(self, passage_id: str, role: str | None) -> None:
        self.grades.pop(passage_id, None)  # a new role starts from its own default grade
        if role is None:
            self.labels.pop(passage_id, None)
        else:
            self.labels[passage_id] = role

    def grade(self, passage_id: str) -> int | None:
        """The labelled passage's grade: set by hand, else its role's default."""
        role = self.labels.get(passage_id)
        return None if role is None else self.grades.get(passage_id, GRADE_FOR_ROLE[role])

    def cycle_grade(self, passage_id: str) -> int | None:
        """Next grade of a labelled passage, 1 -> 2 -> 3 -> 1; None when it is not labelled."""
        current = self.grade(passage_id)
        if current is None:
            return None
        new = current % 3 + 1
        if new == GRADE_FOR_ROLE[self.labels[passage_id]]:
            self.grades.pop(passage_id, None)
        else:
            self.grades[passage_id] = new
        return new

    def toggle_tag(self, tag: str) -> None:
        if tag in self.tags:
            self.tags.remove(tag)
        else:
            self.tags.append(tag)

    def problems(self) -> list[str]:
        """Why this card cannot be kept yet (empty when it can): the card's own checks,
        then its slice's rule (`curator.slicerules`, the one `verify` applies)."""
        out = []
        if not self.slice:
            out.append("choose a slice (1-9)")
        if self.expect_empty:
            if self.labels:
                out.append("a negative case lists no passages: clear the labels (c) or unmark negative (n)")
        elif "primary" not in self.labels.values():
            out.append("mark a primary passage (p) or mark the question negative (n)")
        if not self.query.strip():
            out.append("the question is empty (e to edit)")
        if self.slice:
            rule = {
                "slice": self.slice,
                "relevant": [{"role": role} for role in self.labels.values()],
                "expect_empty": self.expect_empty,
                "require_all": self.require_all,
                "freshness": self.freshness(),
            }
            broken = [p for p in slice_problems(rule) if "needs a primary passage" not in p]
            if broken:
                hint = SLICE_HINTS.get(self.slice)
                out.append("; ".join(broken) + (f" ({hint})" if hint else ""))
        return out

    def apply_slice(self, name: str) -> None:
        """Put the card in slice `name` with that slice's defaults: multi_hop requires all
        primaries, freshness pins the revision shown, negative expects no passage (and
        drops the labels); any other slice is not negative."""
        self.slice = name
        self.require_all = name == "multi_hop"
        self.expect_empty = name == "negative"
        if name == "negative":
            self.labels.clear()
            self.grades.clear()
        if name == "freshness" and self.max_age_days is None:
            self.pinned = True

    def relevant(self) -> list[dict[str, Any]]:
        out = []
        for pid, role in self.labels.items():
            item: dict[str, Any] = {"id": pid, "role": role, "grade": self.grades.get(pid)}
            row = self.row(pid)
            if self.pinned and role == "primary" and row is not None:
                item["revision"] = row.revision
            elif self.case is not None:
                old = next((r for r in self.case.relevant if r.id == pid and r.role == role), None)
                if old is not None and old.revision and not self.pinned:
                    item["revision"] = old.revision if self.case.freshness else None
            out.append({k: v for k, v in item.items() if v is not None})
        return out

    def case_fields(self) -> dict[str, Any]:
        """The case this card describes, as `QuestionSet.add` and `revise` take it."""
        return {
            "query": self.query.strip(),
            "slice": self.slice,
            "relevant": [] if self.expect_empty else self.relevant(),
            "expect_empty": self.expect_empty,
            "require_all": self.require_all and not self.expect_empty,
            "max_rank": None if self.expect_empty else self.max_rank,
            "freshness": self.freshness(),
            "explanation": self.explanation.strip(),
            "tags": list(self.tags),
        }

    def freshness(self) -> dict[str, Any] | None:
        if self.pinned:
            first = next((pid for pid, role in self.labels.items() if role == "primary"), None)
            row = self.row(first) if first else None
            if row is not None:
                return {"revision": row.revision}
        if self.max_age_days is not None:
            return {"max_age_days": self.max_age_days}
        return None


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
        # Searches and passage reads for cards use a second connection, so a prefetch in
        # flight never holds up the write of a decision (WAL: readers don't block writers).
        self._reader: Workspace | None = None
        self._pool: Pool | None = None  # the suggestion sources, loaded on the first card
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
        if self._reader is None:
            self._reader = Workspace.open(self.ws.root)
        self._count_set()
        self.stats.remaining = self._remaining()

    def close(self) -> None:
        """Give back every lease this session still holds."""
        with self._lock:
            for cid in sorted(self._held):
                self.ws.release(cid, self.lease_owner)
            self._held.clear()
            self._queue.clear()
            if self._reader is not None:
                self._reader.close()
                self._reader = None

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
        """The candidate's card (`prepare`) with its pre-selected slice's defaults applied;
        a candidate marked negative goes to the negative slice."""
        card = self.prepare(cand)
        if card.expect_empty and "negative" in self.slices:
            card.slice = "negative"
        if card.slice is not None:
            card.apply_slice(card.slice)
        return card

    def add_question(self, text: str) -> Card:
        """A question typed in place by the reviewer: queued as a manual candidate, leased
        to this session and returned as a card. Refused when the same question (normalised)
        is queued already."""
        text = " ".join(text.split())
        if not text:
            raise CuratorError("the new question is empty")
        with self._lock:
            added = _writing(lambda: self.ws.add_candidates(
                [CandidateIn(query=text, source_kind="manual", provenance={"typed_by": self.reviewer})]))
            if not added.added:
                cand = self.ws.candidate(added.existing[0])
                state = cand.state if cand else "queued"
                raise CuratorError(f"that question is already a candidate (#{added.existing[0]}, {state})")
            cid = added.added[0]
            _writing(lambda: self.ws.lease_candidate(cid, self.lease_owner))
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

    def prepare(self, cand: Candidate) -> Card:
        """Build a card: the pooled suggestions (the candidate's own passages, BM25, the
        dense retriever, stored runs) in reciprocal-rank-fusion order."""
        rows = self.pooled_rows(cand.query, cand.suggestions)
        slice = cand.suggested_slice if cand.suggested_slice in self.ws.config.slices else None
        if cand.expect_empty and slice is None and "negative" in self.ws.config.slices:
            slice = "negative"
        return Card(
            candidate=cand,
            query=cand.query,
            rows=rows,
            slice=slice,
            expect_empty=cand.expect_empty,
            require_all=cand.require_all,
        )

    @property
    def reader(self) -> Workspace:
        return self._reader or self.ws

    def _row(self, passage_id: str, revision: str | None, reason: str) -> Row:
        """The passage's row; a `missing` one when the candidate or case names a passage
        the corpus lacks."""
        with self.reader.lock:
            passage = self.reader.passage(passage_id, revision)
        if passage is None:
            return Row(id=passage_id, revision=revision or "?", reason=reason, missing=True,
                       text="(this passage is not in the corpus)")
        body = [line for line in passage.text.splitlines() if not line.lstrip().startswith("#")]
        return Row(id=passage.id, revision=passage.revision, heading=passage.heading, title=passage.title or "",
                   snippet=" ".join(" ".join(body).split())[:SNIPPET_CHARS], reason=reason,
                   text=passage.text, committed_at=passage.committed_at)

    @property
    def pool(self) -> Pool:
        with self._lock:
            if self._pool is None or self._pool.ws is not self.reader:
                self._pool = Pool(self.reader)
            return self._pool

    def pooled_rows(self, query: str, own: list[Suggestion], query_id: str | None = None) -> list[Row]:
        """The card's rows: every passage the candidate names, then the other pooled
        passages up to `[review] suggestions`, all in fused order."""
        try:
            pooled = self.pool.suggest(query, query_id=query_id, own=own)
        except CuratorError:  # the dense endpoint is down: the card still shows the rest
            pooled = Pool(self.reader, dense=False).suggest(query, query_id=query_id, own=own)
        own_reason = {s.id: s.reason or "suggested" for s in own}
        budget = self.ws.config.review.suggestions
        rows = []
        for p in pooled:
            if p.id not in own_reason:
                if budget <= 0:
                    continue
                budget -= 1
            reason = own_reason.get(p.id) or ("search" if any(s == "bm25" for s, _ in p.sources) else p.sources[0][0])
            row = self._row(p.id, p.revision, reason)
            if p.snippet and not row.missing:
                row.snippet = p.snippet
            row.sources = list(p.sources)
            rows.append(row)
        return rows

    def search_rows(self, text: str, reason: str = "search") -> list[Row]:
        with self.reader.lock:
            hits = self.reader.search(text, limit=self.ws.config.review.suggestions)
        rows = []
        for rank, hit in enumerate(hits, 1):
            row = self._row(hit.id, hit.revision, reason)
            row.snippet = hit.snippet
            row.sources = [(reason, rank)]
            rows.append(row)
        return rows

    def _with_search(self, rows: list[Row], query: str) -> list[Row]:
        """`rows`, then the search results for `query` not among them."""
        known = {r.id for r in rows}
        return rows + [r for r in self.search_rows(query) if r.id not in known]

    def add_search(self, card: Card, text: str) -> list[Row]:
        """Search the corpus with the reviewer's words: every hit goes to the top of the
        card in search order, rows already on the card included (they keep their labels and
        sources, and gain `your search`)."""
        found = self.search_rows(text, reason="your search")
        existing = {r.id: r for r in card.rows}
        top = []
        for row in found:
            old = existing.pop(row.id, None)
            if old is not None:
                old.sources = [s for s in old.sources if s[0] != "your search"] + row.sources
                old.snippet = row.snippet or old.snippet
                row = old
            top.append(row)
        card.rows[:] = top + [r for r in card.rows if r.id in existing]
        return found

    # ---- decisions -----------------------------------------------------------------------

    def keep(self, card: Card) -> Case:
        """Append the case to the set (fsynced), then record the keep. Raises IncompleteCase
        (the card or its slice's rule), CuratorError (the candidate has an active case
        already) or WriteFailed (then the same keep may be retried: a case whose line did
        reach the file is not written twice)."""
        _refuse_incomplete(card, "not kept")
        cand = card.candidate
        assert cand is not None
        with self._lock:
            started = time.perf_counter()
            case = self._retried_keep(cand.id) if cand.id in self._failed_keeps else None
            if case is None:
                self._refuse_second_case(cand)
                data = {**card.case_fields(), "source": _source(card, cand)}
                self._failed_keeps.add(cand.id)
                case = _writing(lambda: self.qs.add(data, reviewer=self.reviewer, versions=self.ws.versions()))
            _writing(lambda: self.ws.decide(
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

        _writing(finish)
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
            _writing(lambda: self.ws.decide(cid, action, self.reviewer, state=state))
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
                    retired = _writing(lambda: self.qs.retire(
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
            retired = _writing(lambda: qs.retire(query_id, reason="undo", reviewer=self.reviewer,
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
        state = _previous_state(self.ws, candidate_id)
        _writing(lambda: self.ws.decide(candidate_id, "undo", self.reviewer, state=state, detail=detail))
        if self.ws.lease_candidate(candidate_id, self.lease_owner):
            self._held.add(candidate_id)
        self.stats.remaining = self._remaining()
        self.stats.showing = 1  # the undone card comes back on screen

    # ---- the set browser -----------------------------------------------------------------

    def cases(self) -> list[Case]:
        return list(self.qs.read().cases.values()) if self.qs.exists() else []

    def history(self, query_id: str) -> list[tuple[Case, str, str]]:
        """Every rev of a case with its change-log action and reason, oldest first."""
        result = self.qs.read()
        reasons = {(e.query_id, e.rev): (e.action, e.reason) for e in self.qs.changelog()}
        return [
            (case, *reasons.get((case.query_id, case.rev), ("?", "")))
            for case in result.history.get(query_id, [])
        ]

    def card_for_case(self, case: Case) -> Card:
        """A card to relabel an existing case: its labelled passages, then search results."""
        rows = [self._row(rel.id, rel.revision, "labelled") for rel in case.relevant]
        return Card(
            candidate=None,
            query=case.query,
            rows=self._with_search(rows, case.query),
            slice=case.slice,
            labels={r.id: r.role for r in case.relevant},
            grades={r.id: r.grade for r in case.relevant
                    if r.grade is not None and r.grade != GRADE_FOR_ROLE[r.role]},
            expect_empty=case.expect_empty,
            require_all=case.require_all,
            pinned=bool(case.freshness and case.freshness.revision),
            max_age_days=case.freshness.max_age_days if case.freshness else None,
            max_rank=case.max_rank,
            explanation=case.explanation,
            tags=list(case.tags),
            case=case,
        )

    def save_case(self, card: Card, reason: str) -> Case:
        """Append the card's labels as the case's next rev. The change-log action is `edit`
        when the question text changed, `reslice` when only the slice did, else `relabel`."""
        assert card.case is not None
        _refuse_incomplete(card, "not saved")
        old = card.case
        changes = card.case_fields()
        if changes["query"] != old.query:
            action = "edit"
        elif changes["slice"] != old.slice and _same_labels(old, changes):
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
            case = _writing(lambda: self.qs.revise(
                query_id, change, action=action, reason=reason.strip(),  # type: ignore[arg-type]
                reviewer=self.reviewer, versions=self.ws.versions(),
            ))
            self._count_set()
        return case


def reconcile(ws: Workspace, set_name: str) -> list[str]:
    """Mark kept every pending candidate whose case reached the set's file although the
    keep decision did not reach the database (a crash between the two). Returns query_ids.
    The decision is credited to the reviewer of the revision that made it, never to whoever
    opens the app next."""
    qs = ws.question_set(set_name)
    if not qs.exists():
        return []
    fixed = []
    reasons = {(e.query_id, e.rev): e.reason for e in qs.changelog()}
    for query_id, revs in qs.read().history.items():
        first, last = revs[0], revs[-1]
        cid = first.source.candidate_id
        cand = ws.candidate(cid) if cid is not None else None
        if cand is None:
            continue
        undone = last.status == "retired" and reasons.get((query_id, last.rev)) == "undo"
        if cand.state in ("pending", "skipped") and last.status == "active":
            ws.decide(cand.id, "keep", last.reviewer, state="kept", set_name=set_name, query_id=query_id,
                      detail={"rev": first.rev, "reconciled": True})
            fixed.append(query_id)
        elif cand.state == "kept" and cand.query_id == query_id and undone:
            # The undo's retiring rev was written; its decision was lost.
            ws.decide(cand.id, "undo", last.reviewer, state="pending",
                      detail={"undid": "keep", "query_id": query_id, "reconciled": True})
            fixed.append(query_id)
    return fixed


def edited_source(case: Case) -> dict[str, Any]:
    """The `source` of a case whose question was edited: kind "edited", the first original
    text and its provenance nested under `original` (an edit of an edit keeps the first)."""
    before = case.source.model_dump(exclude_none=True)
    if before.get("kind") == "edited":
        return before
    edited: dict[str, Any] = {"kind": "edited", "original": {"query": case.query, **before}}
    if case.source.candidate_id is not None:
        edited["candidate_id"] = case.source.candidate_id
        del edited["original"]["candidate_id"]
    return edited


def _source(card: Card, cand: Candidate) -> dict[str, Any]:
    """A kept case's `source`: the candidate's provenance, nested under `original` with the
    text as asked when the reviewer edited the question on the card."""
    source: dict[str, Any] = {"kind": cand.source_kind, "candidate_id": cand.id}
    prov = cand.provenance or {}
    if cand.source_kind == "log":
        source.update(count=cand.count, first_seen=prov.get("first_seen"), last_seen=prov.get("last_seen"))
    elif cand.source_kind == "generated":
        source.update({k: prov[k] for k in ("model", "prompt", "prompt_version") if k in prov})
    source = {k: v for k, v in source.items() if v is not None}
    if " ".join(card.query.split()) != " ".join(cand.query.split()):
        original = {k: v for k, v in source.items() if k != "candidate_id"}
        return {"kind": "edited", "candidate_id": cand.id, "original": {"query": cand.query, **original}}
    return source


def _writing(write: Callable[[], T]) -> T:
    """Run one write; an I/O failure (disk full, permission denied, read-only file system,
    a database that cannot be written) becomes a WriteFailed that says so."""
    try:
        return write()
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise WriteFailed(f"could not write: {exc.strerror or exc}{where}") from exc
    except sqlite3.Error as exc:
        raise WriteFailed(f"could not write the workspace database: {exc}") from exc


def _previous_state(ws: Workspace, candidate_id: int) -> str:
    """The state a candidate had before its last decision (pending unless it was skipped)."""
    actions = [d.action for d in ws.decisions(candidate_id)]
    return "skipped" if len(actions) >= 2 and actions[-2] == "skip" else "pending"


def _same_labels(old: Case, changes: dict[str, Any]) -> bool:
    before = sorted((r.id, r.role, r.grade) for r in old.relevant)
    after = sorted((r["id"], r["role"], r.get("grade", GRADE_FOR_ROLE[r["role"]])) for r in changes["relevant"])
    return (before == after and old.expect_empty == changes["expect_empty"]
            and old.max_rank == changes["max_rank"])


def _refuse_incomplete(card: Card, verb: str) -> None:
    if problems := card.problems():
        raise IncompleteCase(f"{verb}: " + "; ".join(problems))
