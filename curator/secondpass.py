"""The blind second pass (`curator review --second-pass`): another reviewer decides items
the first reviewer already decided, without seeing how.

The items are the set's active cases (the first reviewer kept them) and the candidates
the first reviewer binned, mixed in one seeded order so their position tells nothing. A
card shows the question, its provenance and the pooled suggestions (curator.suggest), as
a first card does, but no slice, label, grade or decision of the first reviewer, and no
suggested slice or negative mark either. Keep and bin are refused and allowed by the same
rules as a first review; the result is a second judgment (curator.judgments), never a
new case revision. `SecondPassSession` is a `ReviewSession` whose queue is filled from
the items instead of leased, so the same app drives it and draws its cards the same way
(the next card prepared ahead, `ReviewSession.upcoming`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal

from curator import judgments
from curator.errors import CuratorError
from curator.judgments import Judgment
from curator.models import Candidate, Case, Freshness, Relevant, utcnow
from curator.review import Card, ReviewSession, Step
from curator.review.card import refuse_incomplete
from curator.review.writes import writing
from curator.workspace import Workspace


@dataclass
class Item:
    """One thing to judge a second time."""

    target: str  # case:<query_id> | candidate:<id>
    query: str
    first_reviewer: str
    first_decision: Literal["keep", "bin"]
    rev: int | None = None
    candidate_id: int | None = None  # the workspace candidate it came from, if known


def items(ws: Workspace, set_name: str, *, sample: int | None = None, seed: int = 0,
          include_binned: bool = True) -> list[Item]:
    """Every item of the second pass in its seeded order (`sample`: the first N of that
    order, so the same --sample and --seed give the same items on every run)."""
    qs = ws.question_set(set_name)
    found: list[Item] = []
    kept_from: set[int] = set()
    if qs.exists():
        for case in qs.read().cases.values():
            if case.status != "active":
                continue
            cid = case.source.candidate_id
            if cid is not None:
                kept_from.add(cid)
            found.append(Item(f"case:{case.query_id}", case.query, case.reviewer, "keep", case.rev, cid))
    if include_binned:
        binned_by = {d.candidate_id: d.reviewer for d in ws.decisions() if d.action == "bin"}
        for cand in ws.candidates(state="binned"):
            if cand.id not in kept_from:
                found.append(Item(f"candidate:{cand.id}", cand.query, binned_by.get(cand.id, ""), "bin",
                                  candidate_id=cand.id))
    found.sort(key=lambda item: item.target)
    random.Random(seed).shuffle(found)
    return found[:sample] if sample is not None else found


def todo(ws: Workspace, set_name: str, reviewer: str, chosen: list[Item]) -> list[Item]:
    """Of `chosen`, those `reviewer` may judge: not decided by them the first time, not
    judged by them yet."""
    standing = judgments.read(judgments.path_of(ws.question_set(set_name))).standing()
    return [i for i in chosen if i.first_reviewer != reviewer and (i.target, reviewer) not in standing]


class SecondPassSession(ReviewSession):
    """A reviewer's blind second pass over one set (see the module's docstring)."""

    blind = True  # the set browser stays closed: it would show the first labels

    def __init__(self, ws: Workspace, *, set_name: str | None = None, reviewer: str | None = None,
                 sample: int | None = None, seed: int = 0, prefetch: int = 3):
        super().__init__(ws, set_name=set_name, reviewer=reviewer, prefetch=prefetch)
        self.sample = sample
        self.seed = seed
        self._items: list[Item] = []  # the queue's (blind) candidate ids index this list
        self._order: list[int] = []  # indexes of the items not queued yet, in order

    def start(self) -> None:
        self.cards.open()
        judgments.sync(self.ws, self.qs)  # lines a clone or a merge brought in
        self._count_set()
        self._items = todo(self.ws, self.set_name, self.reviewer,
                           items(self.ws, self.set_name, sample=self.sample, seed=self.seed))
        self._order = list(range(len(self._items)))
        self.stats.remaining = len(self._order)

    def _remaining(self) -> int:
        return len(self._queue) + len(self._order)

    # ---- the queue and its cards -----------------------------------------------------------

    def _refill(self, target: int) -> None:
        """Queue the next items, up to `target`, as blind candidates (a first review leases
        candidates here; the items of a second pass are this session's alone)."""
        while len(self._queue) < target and self._order:
            self._queue.append(self._blind_candidate(self._order.pop(0)))

    def _blind_candidate(self, index: int) -> Candidate:
        """The item as the card shows it: its question, provenance and own suggestions,
        with the item's index as its id."""
        item = self._items[index]
        real = self.ws.candidate(item.candidate_id) if item.candidate_id is not None else None
        return Candidate(
            id=index, query=item.query, norm="", created_at=utcnow(), updated_at=utcnow(),
            source_kind=real.source_kind if real is not None else "import",
            provenance=real.provenance if real is not None else {},
            count=real.count if real is not None else 1,
            rationale=real.rationale if real is not None else "",
            suggestions=real.suggestions if real is not None else [],
        )  # no suggested slice, negative mark or state: they would hint at the first decision

    def new_card(self, cand: Candidate) -> Card:
        """The item's card: question, provenance and pooled suggestions only (the stored
        runs that hold a kept case's query id included)."""
        target = self._items[cand.id].target
        query_id = target.partition(":")[2] if target.startswith("case:") else None
        return Card(candidate=cand, query=cand.query,
                    rows=self.cards.pooled_rows(cand.query, cand.suggestions, query_id=query_id))

    def add_question(self, text: str) -> Card:
        raise CuratorError("a second pass judges the items it was given; add questions in a first review")

    # ---- decisions -----------------------------------------------------------------------

    def keep(self, card: Card) -> Case:
        refuse_incomplete(card, "not kept")
        item = self._item(card)
        fields = card.case_fields()
        judgment = self._judge(card, "keep", slice=fields["slice"], expect_empty=fields["expect_empty"],
                               require_all=fields["require_all"], max_rank=fields["max_rank"],
                               freshness=Freshness.model_validate(fields["freshness"]) if fields["freshness"] else None,
                               relevant=[Relevant.model_validate(r) for r in fields["relevant"]])
        self.stats.kept += 1
        label = judgment.query_id or item.target
        # What the screen names as kept: the judged item, not a new case.
        return Case.model_construct(query_id=f"a second judgment of {label}", rev=1, query=card.query,
                                    slice=fields["slice"])

    def bin(self, card: Card) -> None:
        self._judge(card, "bin")
        self.stats.binned += 1

    def skip(self, card: Card) -> None:
        """Later: the item goes to the end of this session's queue; nothing is written."""
        assert card.candidate is not None
        with self._lock:
            self._order.append(card.candidate.id)
            self._cards[card.candidate.id] = card
            self.undo_stack.append(Step("skip", card))
            self.stats.skipped += 1  # not reviewed: the item comes back at the end
            self.stats.remaining = self._remaining()

    def _item(self, card: Card) -> Item:
        assert card.candidate is not None
        return self._items[card.candidate.id]

    def _judge(self, card: Card, decision: Literal["keep", "bin"], **labels: Any) -> Judgment:
        item = self._item(card)
        judgment = Judgment(
            target=item.target, query=card.query.strip() or item.query, rev=item.rev,
            first_reviewer=item.first_reviewer, first_decision=item.first_decision, decision=decision,
            reviewer=self.reviewer, session=self.session_id, **labels,
        )
        with self._lock:
            writing(lambda: judgments.append(self.ws, self.qs, judgment))
            self.undo_stack.append(Step(decision, card))
            self.stats.reviewed += 1
        return judgment

    def undo(self) -> Card | None:
        """Take back this session's last judgment (an `undo` line) and show its card again."""
        with self._lock:
            if not self.undo_stack:
                return None
            step = self.undo_stack[-1]
            item = self._item(step.card)
            if step.action == "skip":
                assert step.card.candidate is not None
                index = step.card.candidate.id
                self._order = [i for i in self._order if i != index]
                self._queue = [c for c in self._queue if c.id != index]
                self._cards.pop(index, None)
                self.stats.skipped -= 1  # a skip was never counted as reviewed
            else:
                undo = Judgment(target=item.target, query=item.query, rev=item.rev,
                                first_reviewer=item.first_reviewer, first_decision=item.first_decision,
                                decision="undo", reviewer=self.reviewer, session=self.session_id)
                writing(lambda: judgments.append(self.ws, self.qs, undo))
                if step.action == "keep":
                    self.stats.kept -= 1
                else:
                    self.stats.binned -= 1
                self.stats.reviewed -= 1
            self.undo_stack.pop()
            self.stats.remaining = self._remaining()
            self.stats.showing = 1  # the undone card comes back on screen
            return step.card
