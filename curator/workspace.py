"""The workspace: a folder with `curator.toml` and `.curator/workspace.db`.

`Workspace` owns the sqlite-utils Database; the rest of curator asks it for typed
models instead of issuing SQL of its own.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import curator._sqlite  # noqa: F401, I001  (first: sqlite_utils without pandas)

# isort: split
import sqlite_utils

from curator import __version__
from curator.config import CONFIG_FILE, DEFAULT_TOML, Config, load_config
from curator.corpus.records import DocRevision, ImportReport
from curator.errors import CuratorError, WorkspaceNotFound
from curator.migrations import migrations
from curator.models import (
    Candidate,
    CandidateIn,
    Decision,
    Passage,
    SearchHit,
    Suggestion,
    utcnow,
)
from curator.text import normalize_query, sha256_hex

STATE_DIR = ".curator"
DB_FILE = "workspace.db"
# Highlight marks around matched terms in search snippets (rendered bold by the CLI/app).
HL_START, HL_END = "\x02", "\x03"

GITIGNORE = """\
# curator working state: rebuilt from the corpus and the question-set files
.curator/
datasets/*/.lock
datasets/*/.pending.json
datasets/*/.torn-*
"""

GITATTRIBUTES = """\
# Two reviewers' appends on two branches merge without conflicts; `curator verify`
# accepts a union merge (each side's lines keep their order after the shared prefix).
datasets/*/cases.jsonl merge=union
datasets/*/changelog.jsonl merge=union
"""

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_FTS_WORD = re.compile(r"\w+", re.UNICODE)
_FTS_COMPOUND = re.compile(r"\w+(?:[-_./:]\w+)+", re.UNICODE)
SEARCH_POSTINGS = 1_000  # see Workspace.search
_FLUSH_ROWS = 25_000  # rows per transaction: fewer, larger FTS segments


_PASSAGE_COLUMNS = (
    "id", "revision", "doc_id", "path", "url", "title", "heading", "heading_path", "text",
    "fingerprint", "tokens", "committed_at", "is_current", "ordinal",
)
_INSERT_PASSAGE = (
    f"INSERT INTO passages ({', '.join(_PASSAGE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_PASSAGE_COLUMNS))})"
)


@dataclass
class CorpusStats:
    documents: int
    passages: int  # current passages
    passages_all: int  # every revision of every passage
    revisions: int  # document revisions imported


@dataclass
class AddResult:
    added: list[int]
    existing: list[int]


def find_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / CONFIG_FILE).is_file() or (folder / STATE_DIR / DB_FILE).is_file():
            return folder
    return None


class Workspace:
    """An open workspace. Use `Workspace.find()`, `Workspace.open(path)` or `Workspace.init(path)`."""

    def __init__(self, root: Path, config: Config, db: sqlite_utils.Database):
        self.root = root
        self.config = config
        self.db = db
        # One connection is shared by the app's worker threads; writes are serialised.
        self.lock = threading.RLock()

    # ---- opening -------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | os.PathLike[str] = ".") -> Workspace:
        root = Path(path).resolve()
        root.mkdir(parents=True, exist_ok=True)
        config_path = root / CONFIG_FILE
        if not config_path.exists():
            config_path.write_text(DEFAULT_TOML, encoding="utf-8")
        for folder in ("datasets", "prompts", "runs", STATE_DIR):
            (root / folder).mkdir(exist_ok=True)
        _ensure_lines(root / ".gitignore", GITIGNORE)
        _ensure_lines(root / ".gitattributes", GITATTRIBUTES)
        return cls.open(root)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Workspace:
        root = Path(path).resolve()
        if not (root / CONFIG_FILE).is_file() and not (root / STATE_DIR).is_dir():
            raise WorkspaceNotFound(
                f"{root} is not a curator workspace (no {CONFIG_FILE}).",
                f"Create one with `curator init {path}`.",
            )
        config = load_config(root)
        (root / STATE_DIR).mkdir(exist_ok=True)
        conn = sqlite3.connect(
            root / STATE_DIR / DB_FILE, timeout=30, check_same_thread=False, isolation_level=None
        )
        # no sqlite-utils plugins: curator registers none, and looking for them reads
        # every installed package's entry points (15 ms on every command)
        db = sqlite_utils.Database(conn, execute_plugins=False)
        db.execute("PRAGMA busy_timeout = 30000")
        db.enable_wal()
        db.execute("PRAGMA synchronous = NORMAL")
        migrations.apply(db)
        return cls(root, config, db)

    @classmethod
    def find(cls, explicit: str | os.PathLike[str] | None = None, start: Path | None = None) -> Workspace:
        """Open the workspace named by `explicit`, `CURATOR_WORKSPACE`, or found upward from `start`."""
        named = explicit or os.environ.get("CURATOR_WORKSPACE")
        if named:
            return cls.open(named)
        here = (start or Path.cwd()).resolve()
        root = find_root(here)
        if root is None:
            raise WorkspaceNotFound(
                f"No curator workspace in {here} or any parent directory.",
                "Run `curator init` to create one here (or `curator demo` for a ready-made one), "
                "or point to one with -w DIR or CURATOR_WORKSPACE.",
            )
        return cls.open(root)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    # ---- paths and sets --------------------------------------------------------------

    @property
    def datasets_dir(self) -> Path:
        return self.root / "datasets"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def prompts_dir(self) -> Path:
        return self.root / "prompts"

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def set_names(self) -> list[str]:
        if not self.datasets_dir.is_dir():
            return []
        return sorted(
            p.name for p in self.datasets_dir.iterdir() if (p / "cases.jsonl").is_file()
        )

    def question_set(self, name: str | None = None):  # -> QuestionSet (import cycle)
        from curator.questionset import QuestionSet

        return QuestionSet(
            self.datasets_dir / (name or self.config.default_set),
            checkpoint_dir=self.state_dir / "checkpoints",
        )

    def versions(self) -> dict[str, str]:
        """What produced a change: recorded in every change-log entry."""
        from curator.corpus.chunker import CHUNKER_VERSION

        return {
            "curator": __version__,
            "chunker": CHUNKER_VERSION,
            "corpus": self.meta("corpus_version") or "empty",
        }

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.lock:
            self.db["meta"].upsert({"key": key, "value": value}, pk="key")

    # ---- corpus ------------------------------------------------------------------------

    def import_documents(self, docs: Iterable[DocRevision]) -> ImportReport:
        """Store document revisions. The newest revision of a document is current; older
        ones are kept for freshness questions; a revision already stored is left alone."""
        report = ImportReport()
        known = {
            row[0]: (row[1], row[2] or "")
            for row in self.db.execute(
                "SELECT id, current_revision, current_committed_at FROM documents"
            )
        }
        seen = {
            (row[0], row[1]) for row in self.db.execute("SELECT doc_id, revision FROM document_revisions")
        }
        now = utcnow()
        rows: list[dict[str, Any]] = []
        pending_current: dict[str, list[int]] = {}  # doc_id -> indexes in rows
        doc_rows: dict[str, dict[str, Any]] = {}
        rev_rows: list[dict[str, Any]] = []

        def flush() -> None:
            if not rows and not rev_rows:
                return
            with self.transaction():
                start = self.db.execute("SELECT coalesce(max(rowid), 0) FROM passages").fetchone()[0]
                # executemany over tuples: sqlite-utils' insert_all spends more time
                # building statements than SQLite spends storing 100k passages.
                self.db.conn.executemany(_INSERT_PASSAGE, [tuple(r[c] for c in _PASSAGE_COLUMNS) for r in rows])
                self.db.execute(
                    "INSERT INTO passages_fts(rowid, heading, text) "
                    "SELECT rowid, heading, text FROM passages WHERE rowid > ? AND is_current = 1",
                    [start],
                )
                self.db["documents"].upsert_all(doc_rows.values(), pk="id")
                self.db["document_revisions"].insert_all(rev_rows, pk=("doc_id", "revision"))
            rows.clear()
            pending_current.clear()
            doc_rows.clear()
            rev_rows.clear()

        for doc in docs:
            if (doc.doc_id, doc.revision) in seen:
                report.documents_unchanged += 1
                continue
            seen.add((doc.doc_id, doc.revision))
            committed = doc.committed_at or ""
            current = known.get(doc.doc_id)
            becomes_current = current is None or committed > current[1] or (
                committed == current[1] and not doc.historical
            )
            if current is None:
                report.documents_new += 1
            report.revisions_added += 1
            if not becomes_current:
                report.history_revisions += 1
            elif current is not None:
                self._demote(doc.doc_id, rows, pending_current)
            if becomes_current:
                known[doc.doc_id] = (doc.revision, committed)
                doc_rows[doc.doc_id] = {
                    "id": doc.doc_id,
                    "path": doc.path,
                    "url": doc.url,
                    "title": doc.title,
                    "format": doc.format,
                    "current_revision": doc.revision,
                    "current_committed_at": doc.committed_at,
                    "updated_at": now,
                }
            elif doc.doc_id not in known:  # pragma: no cover - history before any current
                known[doc.doc_id] = (doc.revision, committed)
            rev_rows.append(
                {
                    "doc_id": doc.doc_id,
                    "revision": doc.revision,
                    "committed_at": doc.committed_at,
                    "imported_at": now,
                    "passages": len(doc.passages),
                }
            )
            indexes = pending_current.setdefault(doc.doc_id, []) if becomes_current else None
            for p in doc.passages:
                if indexes is not None:
                    indexes.append(len(rows))
                rows.append(
                    {
                        "id": p.id,
                        "revision": doc.revision,
                        "doc_id": doc.doc_id,
                        "path": doc.path,
                        "url": doc.url,
                        "title": p.title or doc.title,
                        "heading": " › ".join(p.heading_path),
                        "heading_path": json.dumps(p.heading_path, ensure_ascii=False),
                        "text": p.text,
                        "fingerprint": _fingerprint(p.text),
                        "tokens": p.tokens,
                        "committed_at": doc.committed_at,
                        "is_current": int(becomes_current),
                        "ordinal": p.ordinal,
                    }
                )
            report.passages_added += len(doc.passages)
            if len(rows) >= _FLUSH_ROWS:
                flush()
        flush()
        if report.revisions_added:
            self._update_corpus_version()
            # Word frequencies are rebuilt by the next search, not here: a corpus is
            # often imported in several steps, and each rebuild scans the whole index.
            self.set_meta("term_stats", "stale")
        return report

    def _refresh_term_stats(self) -> None:
        with self.transaction():
            self.db.execute("DELETE FROM term_stats")
            self.db.execute("INSERT INTO term_stats SELECT term, doc FROM passages_fts_vocab")
            self.db.execute("DELETE FROM meta WHERE key = 'term_stats'")

    def _demote(self, doc_id: str, rows: list[dict[str, Any]], pending: dict[str, list[int]]) -> None:
        """A newer revision of `doc_id` arrived: its current passages become history."""
        for index in pending.pop(doc_id, []):
            rows[index]["is_current"] = 0
        with self.transaction():
            self.db.execute(
                "INSERT INTO passages_fts(passages_fts, rowid, heading, text) "
                "SELECT 'delete', rowid, heading, text FROM passages WHERE doc_id = ? AND is_current = 1",
                [doc_id],
            )
            self.db.execute(
                "UPDATE passages SET is_current = 0 WHERE doc_id = ? AND is_current = 1", [doc_id]
            )

    def _update_corpus_version(self) -> None:
        digest = sha256_hex(
            "\n".join(
                f"{row[0]}@{row[1]}"
                for row in self.db.execute(
                    "SELECT id, current_revision FROM documents ORDER BY id"
                )
            )
        )[:12]
        self.set_meta("corpus_version", digest)

    def corpus_stats(self) -> CorpusStats:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return CorpusStats(
            documents=one("SELECT count(*) FROM documents"),
            passages=one("SELECT count(*) FROM passages WHERE is_current = 1"),
            passages_all=one("SELECT count(*) FROM passages"),
            revisions=one("SELECT count(*) FROM document_revisions"),
        )

    def passage(self, passage_id: str, revision: str | None = None) -> Passage | None:
        """The current passage with this id, or the named revision of it."""
        if revision:
            sql, args = "SELECT * FROM passages WHERE id = ? AND revision = ?", [passage_id, revision]
        else:
            sql = "SELECT * FROM passages WHERE id = ? ORDER BY is_current DESC, committed_at DESC LIMIT 1"
            args = [passage_id]
        row = next(self.db.query(sql, args), None)
        return _passage(row) if row else None

    def passage_revisions(self, passage_id: str) -> list[Passage]:
        """Every stored revision of a passage, newest first."""
        return [
            _passage(row)
            for row in self.db.query(
                "SELECT * FROM passages WHERE id = ? ORDER BY is_current DESC, committed_at DESC, rowid DESC",
                [passage_id],
            )
        ]

    def passages(self, *, current: bool = True, doc_id: str | None = None) -> Iterator[Passage]:
        where, args = ["1 = 1"], []
        if current:
            where.append("is_current = 1")
        if doc_id:
            where.append("doc_id = ?")
            args.append(doc_id)
        for row in self.db.query(
            f"SELECT * FROM passages WHERE {' AND '.join(where)} ORDER BY doc_id, ordinal", args
        ):
            yield _passage(row)

    def existing_passage_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of `ids` exist in the corpus (any revision)."""
        wanted = list(set(ids))
        found: set[str] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0] for r in self.db.execute(f"SELECT DISTINCT id FROM passages WHERE id IN ({marks})", chunk)
            )
        return found

    def resolve_passage_ids(self, ids: Iterable[str]) -> dict[str, str]:
        """Map ids to passages that exist. An id that exists maps to itself; a
        `doc#anchor` whose section was merged into a bigger passage (search logs and links
        point at headings, not chunks) maps to the current passage of `doc` holding that
        heading. Ids that match nothing are left out."""
        from curator.corpus.chunker import slugify

        wanted = set(ids)
        resolved = {pid: pid for pid in self.existing_passage_ids(wanted)}
        by_doc: dict[str, set[str]] = {}
        for pid in wanted - set(resolved):
            doc, sep, anchor = pid.partition("#")
            if sep and anchor:
                by_doc.setdefault(doc, set()).add(anchor)
        for doc, anchors in by_doc.items():
            headings: dict[str, str] = {}
            for row in self.db.execute(
                "SELECT id, text FROM passages WHERE doc_id = ? AND is_current = 1 ORDER BY ordinal", [doc]
            ):
                for match in _ATX_HEADING.finditer(row[1]):
                    headings.setdefault(slugify(match.group(1)), row[0])
            for anchor in anchors:
                if anchor in headings:
                    resolved[f"{doc}#{anchor}"] = headings[anchor]
        return resolved

    def revisions_of(self, passage_id: str) -> list[tuple[str, str | None, bool]]:
        """(revision, committed_at, is_current) of a passage, newest first."""
        return [
            (r[0], r[1], bool(r[2]))
            for r in self.db.execute(
                "SELECT revision, committed_at, is_current FROM passages WHERE id = ? "
                "ORDER BY is_current DESC, committed_at DESC, rowid DESC",
                [passage_id],
            )
        ]

    def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        """BM25 full-text search over current passages.

        Any word may match (OR), and compound identifiers such as `CARRIER-E1042` or
        `parser.max_retries` also count as phrases, so verbatim matches rank first. Words
        are taken rarest first until they would match more than `SEARCH_POSTINGS`
        passages: a word found in most passages ("the", "prometheus" in a Prometheus
        corpus) adds little to BM25 but costs a score for every passage holding it.
        """
        words, phrases = _fts_terms(query)
        if not words and not phrases:
            return []
        with self.lock:
            if self.meta("term_stats") == "stale":
                self._refresh_term_stats()
            frequency = self._term_frequencies(words)
            kept: list[str] = []
            total = 0
            for word in sorted(words, key=lambda w: frequency.get(w, 0)):
                docs = frequency.get(word, 0)
                if docs == 0:
                    continue
                if kept and total + docs > SEARCH_POSTINGS:
                    break
                kept.append(word)
                total += docs
            terms = [f'"{p}"' for p in phrases] + [f'"{w}"' for w in kept]
            if not terms:
                return []
            matches = [" OR ".join(terms)]
            present = [w for w in sorted(words, key=lambda w: frequency.get(w, 0)) if frequency.get(w)]
            if total > SEARCH_POSTINGS and len(present) > 1:
                # Even the rarest word is common: passages holding the two rarest words
                # together are fewer and better; fall back to either if none has both.
                matches.insert(0, f'"{present[0]}" AND "{present[1]}"' + "".join(f' OR "{p}"' for p in phrases))
            top: list[tuple[int, float]] = []
            for match in matches:
                top = self.db.execute(
                    "SELECT rowid, bm25(passages_fts, 2.0, 1.0) FROM passages_fts "
                    "WHERE passages_fts MATCH ? ORDER BY 2 LIMIT ?",
                    [match, limit],
                ).fetchall()
                if top:
                    break
            if not top:
                return []
            marks = ",".join("?" * len(top))
            rows = {
                r[0]: r
                for r in self.db.execute(
                    "SELECT rowid, id, revision, heading_path, title, text FROM passages "
                    f"WHERE rowid IN ({marks})",
                    [rowid for rowid, _ in top],
                )
            }
        # Snippets are cut here, for the shown rows only: FTS5's snippet() needs a second
        # MATCH over every matching passage.
        highlight = set(kept) | {w for p in phrases for w in p.split()}
        return [
            SearchHit(
                id=r[1],
                revision=r[2],
                heading_path=json.loads(r[3] or "[]"),
                title=r[4],
                snippet=snippet(r[5], highlight),
                score=-score,
            )
            for rowid, score in top
            if (r := rows.get(rowid))
        ]

    def _term_frequencies(self, words: list[str]) -> dict[str, int]:
        if not words:
            return {}
        marks = ",".join("?" * len(words))
        return {
            r[0]: r[1]
            for r in self.db.execute(f"SELECT term, docs FROM term_stats WHERE term IN ({marks})", words)
        }

    # ---- candidates --------------------------------------------------------------------

    def add_candidates(self, items: Iterable[CandidateIn]) -> AddResult:
        """Queue candidates for review; one whose normalised text is already queued (in
        any state) is not added again."""
        result = AddResult([], [])
        now = utcnow()
        with self.transaction():
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
                result.added.append(cur.lastrowid)
        return result

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

    def candidate_counts(self) -> dict[str, int]:
        return {
            r[0]: r[1]
            for r in self.db.execute("SELECT state, count(*) FROM candidates GROUP BY state")
        }

    def update_candidate(self, candidate_id: int, **fields: Any) -> None:
        encoded = {
            k: (json.dumps(v, ensure_ascii=False, default=str) if k in ("suggestions", "provenance") else v)
            for k, v in fields.items()
        }
        if "suggestions" in fields:
            encoded["suggestions"] = json.dumps(
                [s.model_dump(exclude_none=True) if isinstance(s, Suggestion) else s for s in fields["suggestions"]]
            )
        encoded["updated_at"] = utcnow()
        with self.lock:
            self.db["candidates"].update(candidate_id, encoded)

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
        `[review] lease_minutes`."""
        now = datetime.now(UTC)
        until = (now + timedelta(minutes=self.config.review.lease_minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
        now_s = now.strftime("%Y-%m-%dT%H:%M:%SZ")
        excluded = list(exclude)
        where, args = _candidate_filter(None, source_kind, slice)
        where += f" AND state IN ({','.join('?' * len(states))})"
        args += list(states)
        where += " AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)"
        args += [reviewer, now_s]
        if excluded:
            where += f" AND id NOT IN ({','.join('?' * len(excluded))})"
            args += excluded
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
        return Decision(
            id=cur.lastrowid,
            candidate_id=candidate_id,
            action=action,
            reviewer=reviewer,
            at=at,
            set_name=set_name,
            query_id=query_id,
            detail=detail or {},
        )

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
        now_s = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        where, args = _candidate_filter(None, source_kind, slice)
        where += f" AND state IN ({','.join('?' * len(states))})"
        where += " AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)"
        args += [*states, reviewer, now_s]
        excluded = list(exclude)
        with self.lock:
            total = self.db.execute(f"SELECT count(*) FROM candidates WHERE {where}", args).fetchone()[0]
            if excluded:
                marks = ",".join("?" * len(excluded))
                total -= self.db.execute(
                    f"SELECT count(*) FROM candidates WHERE {where} AND id IN ({marks})", [*args, *excluded]
                ).fetchone()[0]
        return total

    def lease_candidate(self, candidate_id: int, reviewer: str) -> bool:
        """Lease one named candidate to `reviewer` (undo brings a card back); False when
        another reviewer holds a live lease on it."""
        now = datetime.now(UTC)
        until = (now + timedelta(minutes=self.config.review.lease_minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
        with self.transaction():
            cur = self.db.execute(
                "UPDATE candidates SET lease_owner = ?, lease_until = ? WHERE id = ? AND "
                "(lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)",
                [reviewer, until, candidate_id, reviewer, now.strftime("%Y-%m-%dT%H:%M:%SZ")],
            )
        return cur.rowcount > 0


# ---- helpers ---------------------------------------------------------------------------


def snippet(text: str, words: set[str], size: int = 24) -> str:
    """About `size` words of `text` around the first of `words` (folded as FTS5 folds
    them), each match wrapped in HL_START/HL_END, with `…` where text was cut."""
    spans = [m for m in _FTS_WORD.finditer(text)]
    if not spans:
        return text[:200]
    hits = [i for i, m in enumerate(spans) if _fold(m.group()) in words]
    first = hits[0] if hits else 0
    start = max(0, first - size // 3)
    end = min(len(spans), start + size)
    start = max(0, end - size)
    begin = spans[start].start()
    # to the end of the text when the last word is in the window, so closing
    # punctuation stays; otherwise to the end of the window's last word
    finish = len(text.rstrip()) if end == len(spans) else spans[end - 1].end()
    out = ["…" if start > 0 else ""]
    cursor = begin
    for i in hits:
        if start <= i < end:
            m = spans[i]
            out.append(text[cursor : m.start()])
            out.append(f"{HL_START}{m.group()}{HL_END}")
            cursor = m.end()
    out.append(text[cursor:finish])
    out.append("…" if end < len(spans) else "")
    return "".join(out)


def _fts_terms(text: str) -> tuple[list[str], list[str]]:
    """(words, phrases) of free text as FTS5 sees them: words lower-cased like the
    unicode61 tokenizer, compound identifiers as space-joined phrases."""
    words = list(dict.fromkeys(_fold(w) for w in _FTS_WORD.findall(text)))
    phrases = list(
        dict.fromkeys(" ".join(_fold(w) for w in _FTS_WORD.findall(c)) for c in _FTS_COMPOUND.findall(text))
    )
    return [w for w in words if w], [p for p in phrases if p]


def _fold(word: str) -> str:
    """Lower-case and strip diacritics, as `unicode61 remove_diacritics 2` indexes words."""
    lower = word.lower()
    if lower.isascii():  # nearly every word: nothing to strip
        return lower.replace('"', "")
    decomposed = unicodedata.normalize("NFKD", lower)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).replace('"', "")


def _fingerprint(text: str) -> str:
    from curator.text import fingerprint

    return fingerprint(text)


def _ensure_lines(path: Path, block: str) -> None:
    """Add `block`'s lines that `path` lacks, keeping what the user wrote."""
    existing = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    missing = [line for line in block.splitlines() if line and line not in existing]
    if not missing:
        return
    with path.open("a", encoding="utf-8") as fh:
        if existing and existing[-1] != "":
            fh.write("\n")
        fh.write("\n".join(missing) + "\n")


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


def _passage(row: dict[str, Any]) -> Passage:
    return Passage(
        id=row["id"],
        revision=row["revision"],
        doc_id=row["doc_id"],
        path=row["path"],
        url=row["url"],
        title=row["title"],
        heading_path=json.loads(row["heading_path"] or "[]"),
        text=row["text"],
        fingerprint=row["fingerprint"],
        tokens=row["tokens"] or 0,
        committed_at=row["committed_at"],
        is_current=bool(row["is_current"]),
        ordinal=row["ordinal"] or 0,
    )


def _candidate(row: dict[str, Any]) -> Candidate:
    return Candidate(
        id=row["id"],
        query=row["query"],
        norm=row["norm"],
        source_kind=row["source_kind"],
        state=row["state"],
        suggested_slice=row["suggested_slice"],
        suggestions=[Suggestion(**s) for s in json.loads(row["suggestions"] or "[]")],
        provenance=json.loads(row["provenance"] or "{}"),
        rationale=row["rationale"] or "",
        count=row["count"] or 1,
        expect_empty=bool(row["expect_empty"]),
        require_all=bool(row["require_all"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        query_id=row["query_id"],
        set_name=row["set_name"],
    )


def require(condition: bool, message: str) -> None:
    if not condition:
        raise CuratorError(message)
