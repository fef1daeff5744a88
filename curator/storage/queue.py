"""The review queue: candidates, the leases that keep two reviewers apart, and every
decision a reviewer made (tables `candidates` and `decisions`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from curator.config import Config
from curator.models import Candidate, CandidateIn, Decision, utcnow
from curator.storage.base import Storage
from curator.text import normalize_query


@dataclass
class AddResult:
    added: list[int]
    existing: list[int]


class QueueStorage(Storage):
    config: Config  # set by Workspace: leases last `[review] lease_minutes`

    def add_candidates(self, items: Iterable[CandidateIn]) -> AddResult:
        """Queue candidates for review; one whose normalised text is already queued (in
        any state) is not added again."""
        with self.transaction():
            return self.insert_candidates(items)

    def insert_candidates(self, items: Iterable[CandidateIn]) -> AddResult:
        """`add_candidates` inside the caller's `transaction()` (an import queues its
        candidates and records its files in one)."""
        result = AddResult([], [])
        now = utcnow()
        with self.lock:
            for item in items:
                norm = normalize_query(item.query)
                row = self.db.execute("SELECT id FROM candidates WHERE norm = ?", [norm]).fetchone()
                if row:
                    result.existing.append(row[0])
                    continue
                cur = self.db.execute(
                    "INSERT INTO candidates (query, norm, source_kind, state, suggested_slice, "
                    "suggestions, provenance, rationale, count, expect_empty, require_all, "
                    "created_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        item.query,
                        norm,
                        item.source_kind,
                        item.suggested_slice,
                        json.dumps([s.model_dump(exclude_none=True) for s in item.suggestions]),
                        json.dumps(item.provenance, ensure_ascii=False, default=str),
                        item.rationale,
                        item.count,
                        int(item.expect_empty),
                        int(item.require_all),
                        now,
                        now,
                    ],
                )
                result.added.append(int(cur.lastrowid or 0))  # an INSERT always sets it
        return result

    def log_counts(self, norms: Iterable[str]) -> dict[str, tuple[int, int, dict[str, Any]]]:
        """norm -> (id, count, provenance) of the candidates mined from logs queued under
        `norms` (a generated candidate's count is not a log's)."""
        out: dict[str, tuple[int, int, dict[str, Any]]] = {}
        with self.lock:
            for norm in norms:
                row = self.db.execute("SELECT id, count, provenance FROM candidates WHERE norm = ? AND source_kind = 'log'",
                                      [norm]).fetchone()
                if row:
                    out[norm] = (int(row[0]), int(row[1] or 1), json.loads(row[2] or "{}"))
        return out

    def set_log_counts(self, rows: Iterable[tuple[int, int, dict[str, Any]]]) -> None:
        """Give candidates (id, count, provenance) new counts, inside the caller's
        `transaction()`; their state, decisions, leases and `updated_at` (the time of
        the last decision) stay as they are."""
        with self.lock:
            for cid, count, provenance in rows:
                self.db.execute(
                    "UPDATE candidates SET count = ?, provenance = ? WHERE id = ?",
                    [count, json.dumps(provenance, ensure_ascii=False, default=str), cid],
                )

    def candidate(self, candidate_id: int) -> Candidate | None:
        row = next(self.db.query("SELECT * FROM candidates WHERE id = ?", [candidate_id]), None)
        return _candidate(row) if row else None

    def candidates(
        self,
        *,
        state: str | None = None,
        source_kind: str | None = None,
        slice: str | None = None,
        limit: int | None = None,
    ) -> list[Candidate]:
        """Candidates, most asked first (log count), then oldest first."""
        where, args = _candidate_filter(state, source_kind, slice)
        sql = f"SELECT * FROM candidates WHERE {where} ORDER BY count DESC, id"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [_candidate(r) for r in self.db.query(sql, args)]

    def candidate_norms(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT norm FROM candidates")]

    def candidate_queries(self) -> list[tuple[str, str]]:
        """(norm, query as shown) of every candidate, in the order queued."""
        return [(r[0], r[1]) for r in self.db.execute("SELECT norm, query FROM candidates ORDER BY id")]

    def candidate_counts(self, by: str = "state") -> dict[str, int]:
        """How many candidates per `state` (or per `source_kind`)."""
        column = {"state": "state", "source_kind": "source_kind"}[by]
        return dict(self.db.execute(f"SELECT {column}, count(*) FROM candidates GROUP BY {column}").fetchall())

    def lease_next(
        self,
        reviewer: str,
        *,
        n: int = 1,
        source_kind: str | None = None,
        slice: str | None = None,
        states: tuple[str, ...] = ("pending",),
        exclude: Iterable[int] = (),
    ) -> list[Candidate]:
        """Lease the next `n` reviewable candidates to `reviewer`, so that a second reviewer
        on the same workspace is served different ones. Leases expire after
        `[review] lease_minutes`. The review app passes its session's lease owner
        (`name@random-id`), not the bare name: two terminals of one person are two owners."""
        where, args = _reviewable(reviewer, source_kind, slice, states, exclude)
        until = self._lease_until()
        with self.transaction():
            ids = [
                r[0]
                for r in self.db.execute(
                    f"SELECT id FROM candidates WHERE {where} "
                    "ORDER BY state = 'skipped', count DESC, id LIMIT ?",
                    [*args, n],
                )
            ]
            for cid in ids:
                self.db.execute(
                    "UPDATE candidates SET lease_owner = ?, lease_until = ? WHERE id = ?",
                    [reviewer, until, cid],
                )
        return [c for cid in ids if (c := self.candidate(cid))]

    def _lease_until(self) -> str:
        return _stamp(datetime.now(UTC) + timedelta(minutes=self.config.review.lease_minutes))

    def release(self, candidate_id: int, reviewer: str) -> None:
        with self.lock:
            self.db.execute(
                "UPDATE candidates SET lease_owner = NULL, lease_until = NULL "
                "WHERE id = ? AND lease_owner = ?",
                [candidate_id, reviewer],
            )

    def decide(
        self,
        candidate_id: int,
        action: str,
        reviewer: str,
        *,
        state: str | None = None,
        set_name: str | None = None,
        query_id: str | None = None,
        detail: dict[str, Any] | None = None,
    ) -> Decision:
        """Record a reviewer's decision (keep, bin, skip, undo, ...) and move the candidate
        to `state`, in one transaction."""
        at = utcnow()
        with self.transaction():
            cur = self.db.execute(
                "INSERT INTO decisions (candidate_id, action, reviewer, at, set_name, query_id, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [candidate_id, action, reviewer, at, set_name, query_id, json.dumps(detail or {})],
            )
            if state is not None:
                self.db.execute(
                    "UPDATE candidates SET state = ?, updated_at = ?, query_id = coalesce(?, query_id), "
                    "set_name = coalesce(?, set_name), lease_owner = NULL, lease_until = NULL "
                    "WHERE id = ?",
                    [state, at, query_id, set_name, candidate_id],
                )
        return Decision(id=cur.lastrowid, candidate_id=candidate_id, action=action, reviewer=reviewer, at=at,
                        set_name=set_name, query_id=query_id, detail=detail or {})

    def decisions(self, candidate_id: int | None = None) -> list[Decision]:
        sql, args = "SELECT * FROM decisions", []
        if candidate_id is not None:
            sql, args = sql + " WHERE candidate_id = ?", [candidate_id]
        return [
            Decision(**{**r, "detail": json.loads(r["detail"] or "{}")})
            for r in self.db.query(sql + " ORDER BY id", args)
        ]

    def count_reviewable(
        self,
        reviewer: str,
        *,
        source_kind: str | None = None,
        slice: str | None = None,
        states: tuple[str, ...] = ("pending", "skipped"),
        exclude: Iterable[int] = (),
    ) -> int:
        """How many candidates `lease_next` could still serve `reviewer` (not leased to
        someone else, not in `exclude`)."""
        where, args = _reviewable(reviewer, source_kind, slice, states, exclude)
        with self.lock:
            row = self.db.execute(f"SELECT count(*) FROM candidates WHERE {where}", args).fetchone()
        return int(row[0])

    def lease_candidate(self, candidate_id: int, reviewer: str) -> bool:
        """Lease one named candidate to `reviewer` (undo brings a card back); False when
        another reviewer holds a live lease on it."""
        with self.transaction():
            cur = self.db.execute(
                "UPDATE candidates SET lease_owner = ?, lease_until = ? WHERE id = ? AND "
                "(lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)",
                [reviewer, self._lease_until(), candidate_id, reviewer, _stamp(datetime.now(UTC))],
            )
        return cur.rowcount > 0


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _reviewable(
    reviewer: str, source_kind: str | None, slice: str | None, states: tuple[str, ...], exclude: Iterable[int]
) -> tuple[str, list[Any]]:
    """The WHERE clause of the candidates `reviewer` may be served: in `states`, not
    leased to someone else (or their lease ran out), not in `exclude`."""
    where, args = _candidate_filter(None, source_kind, slice)
    where += f" AND state IN ({','.join('?' * len(states))})"
    where += " AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)"
    args += [*states, reviewer, _stamp(datetime.now(UTC))]
    excluded = list(exclude)
    if excluded:
        where += f" AND id NOT IN ({','.join('?' * len(excluded))})"
        args += excluded
    return where, args


def _candidate_filter(
    state: str | None, source_kind: str | None, slice: str | None
) -> tuple[str, list[Any]]:
    where, args = ["1 = 1"], []
    if state:
        where.append("state = ?")
        args.append(state)
    if source_kind and source_kind != "all":
        where.append("source_kind = ?")
        args.append({"logs": "log"}.get(source_kind, source_kind))
    if slice:
        where.append("suggested_slice = ?")
        args.append(slice)
    return " AND ".join(where), args


def _candidate(row: dict[str, Any]) -> Candidate:
    """A `candidates` row as a Candidate (its lease columns are left out)."""
    return Candidate(**{
        **row,
        "suggestions": json.loads(row["suggestions"] or "[]"),
        "provenance": json.loads(row["provenance"] or "{}"),
        "rationale": row["rationale"] or "",
        "count": row["count"] or 1,
    })
