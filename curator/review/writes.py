"""What a review decision writes, and how a failed or interrupted write is handled.

`writing` turns an I/O failure of one write into `WriteFailed`; `reconcile` repairs what a
crash between a keep's two writes (the set's file, then the workspace) left behind;
`case_source` and `edited_source` are the provenance a kept or edited case records.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

from curator.errors import CuratorError
from curator.models import GRADE_FOR_ROLE, Candidate, Case
from curator.review.card import Card
from curator.workspace import Workspace

T = TypeVar("T")


class WriteFailed(CuratorError):
    """A decision could not be written (disk full, permission denied, read-only file
    system): nothing of it stands half-done, and the same call may be retried."""


def writing(write: Callable[[], T]) -> T:
    """Run one write; an I/O failure (disk full, permission denied, read-only file system,
    a database that cannot be written) becomes a WriteFailed that says so."""
    try:
        return write()
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        raise WriteFailed(f"could not write: {exc.strerror or exc}{where}") from exc
    except sqlite3.Error as exc:
        raise WriteFailed(f"could not write the workspace database: {exc}") from exc


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


def case_source(card: Card, cand: Candidate) -> dict[str, Any]:
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


def previous_state(ws: Workspace, candidate_id: int) -> str:
    """The state a candidate had before its last decision (pending unless it was skipped)."""
    actions = [d.action for d in ws.decisions(candidate_id)]
    return "skipped" if len(actions) >= 2 and actions[-2] == "skip" else "pending"


def same_labels(old: Case, changes: dict[str, Any]) -> bool:
    """Whether `changes` (case fields) label the case as `old` does: same passages, roles,
    grades, negative mark and max rank."""
    before = sorted((r.id, r.role, r.grade) for r in old.relevant)
    after = sorted((r["id"], r["role"], r.get("grade", GRADE_FOR_ROLE[r["role"]])) for r in changes["relevant"])
    return (before == after and old.expect_empty == changes["expect_empty"]
            and old.max_rank == changes["max_rank"])
