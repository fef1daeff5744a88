"""Documents, their revisions and passages: what `corpus add` stores and the rest reads.

Tables: `documents` (the current revision of each), `document_revisions` (one row per
revision ever imported), `passages` (every revision of every passage) and the FTS index
`passages_fts`, which holds current passages only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from curator.models import DocRevision, ImportReport, Passage, PassageRecord, utcnow
from curator.storage.base import Storage
from curator.storage.terms import ident_terms, path_terms
from curator.text import fingerprint, sha256_hex, slugify

_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_FLUSH_ROWS = 25_000  # rows per transaction: fewer, larger FTS segments


_PASSAGE_COLUMNS = (
    "id", "revision", "doc_id", "path", "url", "title", "heading", "heading_path", "text",
    "fingerprint", "tokens", "committed_at", "is_current", "ordinal", "ident_terms", "path_terms",
)
_FTS_COLUMNS = "heading, text, ident_terms, path_terms"
_IS_CURRENT = _PASSAGE_COLUMNS.index("is_current")
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


class CorpusStorage(Storage):
    def import_documents(self, docs: Iterable[DocRevision]) -> ImportReport:
        """Store document revisions. The newest revision of a document is current; older
        ones are kept for freshness questions; a revision already stored is left alone."""
        report = ImportReport()
        # doc_id -> commit time of its current revision ("" when unknown)
        known = {row[0]: row[1] or "" for row in self.db.execute("SELECT id, current_committed_at FROM documents")}
        seen = set(self.db.execute("SELECT doc_id, revision FROM document_revisions").fetchall())
        now = utcnow()
        # Passage rows as lists in _PASSAGE_COLUMNS order: executemany takes them as they
        # are (sqlite-utils' insert_all spends more time building statements than SQLite
        # spends storing 100k passages).
        rows: list[list[Any]] = []
        current_rows: dict[str, list[list[Any]]] = {}  # doc_id -> its current rows in `rows`
        doc_rows: dict[str, dict[str, Any]] = {}
        rev_rows: list[dict[str, Any]] = []

        def flush() -> None:
            with self.transaction():
                start = self.db.execute("SELECT coalesce(max(rowid), 0) FROM passages").fetchone()[0]
                self.db.conn.executemany(_INSERT_PASSAGE, rows)
                self.db.execute(
                    f"INSERT INTO passages_fts(rowid, {_FTS_COLUMNS}) "
                    f"SELECT rowid, {_FTS_COLUMNS} FROM passages WHERE rowid > ? AND is_current = 1",
                    [start],
                )
                self.db.table("documents").upsert_all(doc_rows.values(), pk="id")
                self.db.table("document_revisions").insert_all(rev_rows, pk=("doc_id", "revision"))
            rows.clear()
            current_rows.clear()
            doc_rows.clear()
            rev_rows.clear()

        for doc in docs:
            if (doc.doc_id, doc.revision) in seen:
                # a file at a stored revision; with --history, git's copy of a revision the
                # working tree gave is no second "unchanged" file (issue 24: one plain line)
                if not doc.historical:
                    report.documents_unchanged += 1
                continue
            seen.add((doc.doc_id, doc.revision))
            report.revisions_added += 1
            committed = doc.committed_at or ""
            current = known.get(doc.doc_id)
            if current is None:
                report.documents_new += 1
                becomes_current = True
            else:
                becomes_current = committed > current or (committed == current and not doc.historical)
                if becomes_current:
                    self._demote(doc.doc_id, current_rows.pop(doc.doc_id, []))
                else:
                    report.history_revisions += 1
            if becomes_current:
                known[doc.doc_id] = committed
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
            rev_rows.append({"doc_id": doc.doc_id, "revision": doc.revision, "committed_at": doc.committed_at,
                             "imported_at": now, "passages": len(doc.passages)})
            doc_terms = path_terms(doc.path or doc.doc_id)
            added = []
            for p in doc.passages:
                heading = " › ".join(p.heading_path)
                added.append(
                    [p.id, doc.revision, doc.doc_id, doc.path, doc.url, p.title or doc.title,
                     heading, json.dumps(p.heading_path, ensure_ascii=False), p.text,
                     fingerprint(p.text), p.tokens, doc.committed_at, int(becomes_current), p.ordinal,
                     ident_terms(heading, p.text), doc_terms]
                )
            rows.extend(added)
            if becomes_current:
                current_rows[doc.doc_id] = added
            report.passages_added += len(doc.passages)
            if len(rows) >= _FLUSH_ROWS:
                flush()
        if rows or rev_rows:
            flush()
        if report.revisions_added:
            self._update_corpus_version()
            # Word frequencies are rebuilt by the next search, not here: a corpus is
            # often imported in several steps, and each rebuild scans the whole index.
            self.set_meta("term_stats", "stale")
        return report

    def _demote(self, doc_id: str, unstored: list[list[Any]]) -> None:
        """A newer revision of `doc_id` arrived: its current passages become history,
        both those stored and those still waiting in the batch (`unstored`)."""
        for row in unstored:
            row[_IS_CURRENT] = 0
        with self.transaction():
            self.db.execute(
                f"INSERT INTO passages_fts(passages_fts, rowid, {_FTS_COLUMNS}) "
                f"SELECT 'delete', rowid, {_FTS_COLUMNS} FROM passages WHERE doc_id = ? AND is_current = 1",
                [doc_id],
            )
            self.db.execute("UPDATE passages SET is_current = 0 WHERE doc_id = ? AND is_current = 1", [doc_id])

    def _update_corpus_version(self) -> None:
        rows = self.db.execute("SELECT id, current_revision FROM documents ORDER BY id")
        self.set_meta("corpus_version", sha256_hex("\n".join(f"{doc}@{rev}" for doc, rev in rows))[:12])

    def corpus_stats(self) -> CorpusStats:
        row = self.db.execute(
            "SELECT (SELECT count(*) FROM documents), "
            "(SELECT count(*) FROM passages WHERE is_current = 1), "
            "(SELECT count(*) FROM passages), (SELECT count(*) FROM document_revisions)"
        ).fetchone()
        return CorpusStats(documents=row[0], passages=row[1], passages_all=row[2], revisions=row[3])

    def passage(self, passage_id: str, revision: str | None = None) -> Passage | None:
        """The current passage with this id, or the named revision of it."""
        if revision:
            sql, args = "SELECT * FROM passages WHERE id = ? AND revision = ?", [passage_id, revision]
        else:
            sql = "SELECT * FROM passages WHERE id = ? ORDER BY is_current DESC, committed_at DESC LIMIT 1"
            args = [passage_id]
        row = next(self.db.query(sql, args), None)
        return _passage(row) if row else None

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
        return self._ids_among(ids, "")

    def _ids_among(self, ids: Iterable[str], condition: str) -> set[str]:
        """Which of `ids` name passages (meeting `condition`, an SQL fragment ending in
        AND), 500 placeholders per query."""
        wanted = list(set(ids))
        found: set[str] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(r[0] for r in self.db.execute(
                f"SELECT DISTINCT id FROM passages WHERE {condition} id IN ({marks})", chunk))
        return found

    def resolve_passage_ids(self, ids: Iterable[str]) -> dict[str, str]:
        """Map ids to passages that exist. An id that exists maps to itself; a
        `doc#anchor` whose section was merged into a bigger passage (search logs and links
        point at headings, not chunks) maps to the current passage of `doc` holding that
        heading. Ids that match nothing are left out."""
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

    def stored_revisions(self) -> Iterator[tuple[str, str, str | None, list[Passage]]]:
        """(doc_id, revision, document format, passages in order) of every stored document
        revision, for re-chunking (the passages of a chunked revision tile its body)."""
        formats = {r[0]: r[1] for r in self.db.execute("SELECT id, format FROM documents")}
        current: tuple[str, str] | None = None
        batch: list[Passage] = []
        for row in self.db.query("SELECT * FROM passages ORDER BY doc_id, revision, ordinal"):
            key = (row["doc_id"], row["revision"])
            if key != current and current is not None:
                yield current[0], current[1], formats.get(current[0]), batch
                batch = []
            current = key
            batch.append(_passage(row))
        if current is not None:
            yield current[0], current[1], formats.get(current[0]), batch

    def replace_passages(self, doc_id: str, revision: str, records: list[PassageRecord]) -> None:
        """Store `records` as the passages of one stored revision in place of the old ones
        (a new chunker's ids); the revision stays current or history as it was."""
        with self.transaction():
            old = self.db.execute(
                "SELECT rowid, is_current, path, url, title, committed_at FROM passages "
                "WHERE doc_id = ? AND revision = ? ORDER BY ordinal", [doc_id, revision]).fetchall()
            if not old:
                return
            current = old[0][1]
            path, url, title, committed = old[0][2], old[0][3], old[0][4], old[0][5]
            if current:
                self.db.execute(
                    f"INSERT INTO passages_fts(passages_fts, rowid, {_FTS_COLUMNS}) "
                    f"SELECT 'delete', rowid, {_FTS_COLUMNS} FROM passages WHERE doc_id = ? AND revision = ?",
                    [doc_id, revision])
            self.db.execute("DELETE FROM passages WHERE doc_id = ? AND revision = ?", [doc_id, revision])
            start = self.db.execute("SELECT coalesce(max(rowid), 0) FROM passages").fetchone()[0]
            doc_terms = path_terms(path or doc_id)
            rows = []
            for p in records:
                heading = " › ".join(p.heading_path)
                rows.append([p.id, revision, doc_id, path, url, p.title or title, heading,
                             json.dumps(p.heading_path, ensure_ascii=False), p.text, fingerprint(p.text), p.tokens,
                             committed, current, p.ordinal, ident_terms(heading, p.text), doc_terms])
            self.db.conn.executemany(_INSERT_PASSAGE, rows)
            if current:
                self.db.execute(
                    f"INSERT INTO passages_fts(rowid, {_FTS_COLUMNS}) "
                    f"SELECT rowid, {_FTS_COLUMNS} FROM passages WHERE rowid > ?", [start])
        self.set_meta("term_stats", "stale")

    def current_passage_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of `ids` are passages of the current corpus (not only in history)."""
        return self._ids_among(ids, "is_current = 1 AND")

    def passage_listing(self, doc_prefix: str = "", *, history: bool = False) -> list[dict[str, Any]]:
        """Passage ids with their document, revision, commit time and whether current, by
        document and position (`curator corpus list`); only current ones unless `history`."""
        where = "doc_id LIKE ? ESCAPE '\\'"
        args: list[Any] = [doc_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"]
        if not history:
            where += " AND is_current = 1"
        return [
            {"id": r[0], "doc_id": r[1], "revision": r[2], "committed_at": r[3], "current": bool(r[4]),
             "heading_path": json.loads(r[5] or "[]")}
            for r in self.db.execute(
                f"SELECT id, doc_id, revision, committed_at, is_current, heading_path FROM passages WHERE {where} "
                "ORDER BY doc_id, is_current DESC, committed_at DESC, ordinal",
                args,
            )
        ]

    def document_titles(self) -> list[str]:
        """Every document's title (its id where it has none)."""
        return [row[0] for row in self.db.execute("SELECT coalesce(title, id) FROM documents")]

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


def _passage(row: dict[str, Any]) -> Passage:
    """A `passages` row as a Passage (the row's rowid and joined heading are left out)."""
    heading_path = json.loads(row["heading_path"] or "[]")
    row = {k: v for k, v in row.items() if k not in ("ident_terms", "path_terms")}
    return Passage(**{**row, "heading_path": heading_path, "tokens": row["tokens"] or 0, "ordinal": row["ordinal"] or 0})
