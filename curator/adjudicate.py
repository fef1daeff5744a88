"""Settling what the set browser shows as needing a person: a disagreement between a
case's first reviewer and a second judgment, and a case labelled with passage ids the
current corpus no longer has. No textual here: the browser (curator/tui/screens/browser.py)
calls these from its workers.

A resolution is a new revision of the case (`ReviewSession.revise`), never an edit of an
old one: its change-log reason starts with `adjudicated` and names both reviewers and the
side taken (curator.agreement then counts the disagreement as resolved). Taking a side
that binned the case retires it.

A disagreement on a candidate the first reviewer binned and the second would keep has no
case to revise: taking the second side keeps the candidate as a new case from the second
judgment's labels (its `add` carries the adjudicated reason); taking the first confirms
the bin, recorded as an adjudication line of judgments.jsonl (committed like the set, so
a clone sees it settled).
"""

from __future__ import annotations

from typing import Any, Literal

from curator import judgments
from curator.agreement import ADJUDICATED, Disagreement
from curator.corpus.labels import StaleLabel, stale_labels
from curator.errors import CuratorError
from curator.models import Case
from curator.review import Card, ReviewSession, Row
from curator.review.writes import case_source, same_labels, writing

Side = Literal["first", "second"]


def reason(d: Disagreement, what: str, note: str = "") -> str:
    """`adjudicated: ana vs bo (slice, grades): took bo's side; <note>`."""
    text = f"{ADJUDICATED}: {d.first.reviewer} vs {d.second.reviewer} ({', '.join(d.differences)}): {what}"
    return f"{text}; {note.strip()}" if note.strip() else text


def take_side(session: ReviewSession, d: Disagreement, side: Side, note: str = "") -> Case | None:
    """Append the case's next rev with the chosen reviewer's decision: their slice and
    labels (the case's explanation and tags stay), or a retire when they binned it. A
    binned candidate's disagreement goes to `settle_candidate` (None: the bin confirmed)."""
    if d.query_id is None:
        return settle_candidate(session, d, side, note)
    chosen = d.first if side == "first" else d.second
    why = reason(d, f"took {chosen.reviewer}'s side ({side} review)", note)
    if chosen.decision == "bin":
        return session.revise(d.query_id, {}, action="retire", reason=why)
    changes = side_fields(session, d, side)
    latest = session.qs.latest_rev(d.query_id)
    resliced = latest is not None and changes["slice"] != latest.slice and same_labels(latest, changes)
    action = "reslice" if resliced else "relabel"
    return session.revise(d.query_id, changes, action=action, reason=why)


def settle_candidate(session: ReviewSession, d: Disagreement, side: Side, note: str = "") -> Case | None:
    """A binned candidate the second reviewer would keep: the second side keeps it as a new
    case (the second judgment's slice and labels, the adjudicator as its reviewer, reason
    `adjudicated: ...`); the first side confirms the bin: an adjudication line in
    judgments.jsonl, no case changes (None)."""
    candidate_id = candidate_of(d)
    chosen = d.first if side == "first" else d.second
    why = reason(d, f"took {chosen.reviewer}'s side ({side} review)", note)
    if chosen.decision == "bin":
        line = judgments.Adjudication(kind="adjudication", target=d.target, query=d.query,
                                      first_reviewer=d.first.reviewer, second_reviewer=d.second.reviewer, side=side,
                                      decision="bin", reason=why, reviewer=session.reviewer,
                                      session=session.session_id)
        writing(lambda: judgments.append_adjudication(session.ws, session.qs, line))
        return None
    cand = session.ws.candidate(candidate_id)
    if cand is None:
        raise CuratorError(f"{d.target} is not in this workspace's queue")
    if cand.state == "kept":
        raise CuratorError(f"candidate #{candidate_id} was kept since ({cand.query_id}): settle it there")
    judgment = d.judgment
    if judgment is None:
        raise CuratorError(f"no second judgment of {d.target}")
    fields = {k: v for k, v in side_fields(session, d, "second").items() if k != "status"}
    data = {**fields, "query": judgment.query, "source": case_source(Card(candidate=cand, query=judgment.query, rows=[]),
                                                                 cand)}
    with session._lock:
        case = writing(lambda: session.qs.add(data, reviewer=session.reviewer, versions=session.ws.versions(),
                                               reason=why))
        writing(lambda: session.ws.decide(candidate_id, "keep", session.reviewer, state="kept",
                                           set_name=session.set_name, query_id=case.query_id,
                                           detail={"rev": case.rev, "target": d.target, "reason": why}))
    return case


def candidate_of(d: Disagreement) -> int:
    kind, _, key = d.target.partition(":")
    if kind != "candidate" or not key.isdigit():
        raise CuratorError(f"{d.target} is no candidate")
    return int(key)


def side_fields(session: ReviewSession, d: Disagreement, side: Side) -> dict[str, Any]:
    """The case fields of one side: the judged rev's for the first, the judgment's for the
    second."""
    if side == "first":
        assert d.query_id is not None
        history = session.qs.revisions(d.query_id)
        judged = next((c for c in history if c.rev == d.rev), history[-1] if history else None)
        if judged is None:
            raise CuratorError(f"{d.query_id} is not in the set")
        keys = ("slice", "relevant", "expect_empty", "require_all", "max_rank", "freshness", "status")
        return {k: v for k, v in judged.model_dump().items() if k in keys}
    judgment = d.judgment
    if judgment is None:
        raise CuratorError(f"no second judgment of {d.target}")
    return {
        "slice": judgment.slice,
        "relevant": [r.model_dump(exclude_none=True) for r in judgment.relevant],
        "expect_empty": judgment.expect_empty,
        "require_all": judgment.require_all,
        "max_rank": judgment.max_rank,
        "freshness": judgment.freshness.model_dump(exclude_none=True) if judgment.freshness else None,
        "status": "active",
    }


class Adjudicating:
    """The session a relabel of a disagreement runs through: the reason asked for is
    prefixed with the adjudication (both reviewers named); everything else is the session's."""

    def __init__(self, session: ReviewSession, d: Disagreement):
        self._session = session
        self._disagreement = d

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def save_case(self, card: Card, why: str) -> Case:
        return self._session.save_case(card, reason(self._disagreement, "relabelled", why))


# ---- labels on passages that are gone ------------------------------------------------------


def stale_cases(session: ReviewSession, cases: list[Case]) -> dict[str, list[StaleLabel]]:
    """The active cases labelled with ids the current corpus lacks, by query_id."""
    with session.reader.lock:
        found = stale_labels(session.reader, cases)
    out: dict[str, list[StaleLabel]] = {}
    for label in found:
        out.setdefault(label.query_id, []).append(label)
    return out


def stale_card(session: ReviewSession, case: Case, stale: list[StaleLabel]) -> Card:
    """The relabel card of a case with gone passages: each gone passage's row holds its old
    text (reason `gone: old text`), followed by the current passage that now holds its
    heading (reason `holds its heading now`) and the current passages a search for its
    heading and first words finds (`like the old text`), then the case's other rows."""
    card = session.card_for_case(case)
    gone = {s.passage_id: s for s in stale}
    rows: list[Row] = []
    placed: set[str] = set()
    for row in card.rows:
        if row.id in placed:
            continue
        label = gone.get(row.id)
        if label is None:
            rows.append(row)
            placed.add(row.id)
            continue
        row.reason = "gone: old text" if label.in_history else "gone: not in the corpus"
        rows.append(row)
        placed.add(row.id)
        if label.replacement and label.replacement not in placed:
            existing = card.row(label.replacement)
            now = existing or session.cards.row(label.replacement, None, "holds its heading now")
            now.reason = "holds its heading now"
            rows.append(now)
            placed.add(now.id)
        for like in _like(session, row):  # the current passages most like the old text
            if like.id not in placed:
                rows.append(like)
                placed.add(like.id)
    card.rows[:] = rows
    return card


def _like(session: ReviewSession, old: Row, limit: int = 3) -> list[Row]:
    """Current passages found by searching the old passage's heading and first words."""
    words = " ".join([old.heading or "", *(old.snippet or old.text).split()[:12]]).strip()
    if not words:
        return []
    found = session.search_rows(words, reason="like the old text")[:limit]
    return [r for r in found if r.id != old.id]
