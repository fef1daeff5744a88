"""What a review card shows, and how it is built.

`Row` is one passage offered as a label, `Card` the question and the labels being built
(its `problems()` say why it cannot be kept yet). `CardMaker` builds cards on a reading
connection: from a candidate (its pooled suggestions, its suggested slice and that
slice's defaults) or from an existing case (its labelled passages, then search results),
and adds the reviewer's own searches to a card.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from curator.errors import CuratorError
from curator.models import GRADE_FOR_ROLE, Candidate, Case, Suggestion
from curator.slicerules import slice_problems
from curator.suggest.pool import Pool
from curator.workspace import Workspace

SNIPPET_CHARS = 160

# What to press to satisfy each slice's rule (curator.slicerules), shown after the reason.
SLICE_HINTS = {
    "multi_hop": "p on two or more passages, r requires them all",
    "freshness": "f pins the revision shown, a sets a max age",
    "negative": "n marks the question negative",
}


class IncompleteCase(CuratorError):
    """Keep was refused: the case lacks a slice, a primary passage or the negative mark."""


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


def refuse_incomplete(card: Card, verb: str) -> None:
    """Raise IncompleteCase (`verb: why`) when the card cannot be kept or saved yet."""
    if problems := card.problems():
        raise IncompleteCase(f"{verb}: " + "; ".join(problems))


class CardMaker:
    """Builds the cards of one workspace. Passages and searches are read on `reader`, a
    second connection once `open()` ran, so a card built in the background never holds up
    the write of a decision (WAL: readers don't block writers)."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self._reader: Workspace | None = None
        self._pool: Pool | None = None  # the suggestion sources, loaded on the first card
        self._lock = threading.Lock()

    def open(self) -> None:
        if self._reader is None:
            self._reader = Workspace.open(self.ws.root)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    @property
    def reader(self) -> Workspace:
        return self._reader or self.ws

    @property
    def pool(self) -> Pool:
        with self._lock:
            if self._pool is None or self._pool.ws is not self.reader:
                self._pool = Pool(self.reader)
            return self._pool

    # ---- cards ---------------------------------------------------------------------------

    def for_candidate(self, cand: Candidate) -> Card:
        """The candidate's card: the pooled suggestions (the candidate's own passages,
        BM25, the dense retriever, stored runs) in reciprocal-rank-fusion order, and its
        suggested slice with that slice's defaults; a candidate marked negative goes to
        the negative slice."""
        slices = self.ws.config.slices
        slice = cand.suggested_slice if cand.suggested_slice in slices else None
        if cand.expect_empty and "negative" in slices:
            slice = "negative"
        card = Card(
            candidate=cand,
            query=cand.query,
            rows=self.pooled_rows(cand.query, cand.suggestions),
            slice=slice,
            expect_empty=cand.expect_empty,
            require_all=cand.require_all,
        )
        if card.slice is not None:
            card.apply_slice(card.slice)
        return card

    def for_case(self, case: Case) -> Card:
        """A card to relabel an existing case: its labelled passages, then search results."""
        rows = [self.row(rel.id, rel.revision, "labelled") for rel in case.relevant]
        known = {r.id for r in rows}
        return Card(
            candidate=None,
            query=case.query,
            rows=rows + [r for r in self.search_rows(case.query) if r.id not in known],
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

    # ---- rows ----------------------------------------------------------------------------

    def row(self, passage_id: str, revision: str | None, reason: str) -> Row:
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
            row = self.row(p.id, p.revision, reason)
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
            row = self.row(hit.id, hit.revision, reason)
            row.snippet = hit.snippet
            row.sources = [(reason, rank)]
            rows.append(row)
        return rows

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
