"""Triage decisions in the workspace database: the one triage module that issues SQL.

One `triage_decisions` row per decision (migration m006_triage); an undo is a row of its
own, and the decision it took back names it in `undone_by`. Writes run in
`ws.transaction()`, reads under `ws.lock` (the app reads from a worker thread).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from curator.workspace import Workspace

TABLE = "triage_decisions"


@dataclass
class Decision:
    id: int
    run: str  # the artefact's file name in runs/
    set_name: str
    query_id: str
    slice: str
    failure: str
    cause: str
    note: str
    action: str  # relabel | repin | regression | undo
    rev: int | None  # the rev it appended to the set (None: nothing appended)
    reviewer: str
    at: str
    undone_by: int | None = None


def decisions(ws: Workspace, run: str | None = None) -> list[Decision]:
    """Stored triage decisions (of one run, by its artefact file name), oldest first."""
    where, args = ("run = ?", [run]) if run else (None, None)
    with ws.lock:
        rows = list(ws.db.table(TABLE).rows_where(where, args, order_by="id"))
    return [Decision(**row) for row in rows]


def record(ws: Workspace, decision: Decision) -> Decision:
    """Store a new decision (its `id` is not used); returns it with the id it was given."""
    row = asdict(decision)
    del row["id"]
    with ws.transaction():
        new_id = ws.db.table(TABLE).insert(row).last_rowid  # the id: an INTEGER PRIMARY KEY
    assert new_id is not None  # an insert always gives one
    return replace(decision, id=new_id)


def mark_undone(ws: Workspace, decision: Decision, undo: Decision) -> None:
    with ws.transaction():
        ws.db.table(TABLE).update(decision.id, {"undone_by": undo.id})
