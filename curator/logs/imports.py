"""Which log files a workspace imported, and for which time windows.

A file is known by its content fingerprint (and, to skip even the reading, by its path,
size and mtime). A compressed file's is that of its decompressed content, so a log and
its rotated, compressed copy are one file; builds before 2026-12-04 recorded the
fingerprint of its stored bytes, which is still recognised (`FileRead.also_known_as`).
A log that grew since it was imported (the live `access.log`) begins with the imported
file's bytes: its row's block digests say so (`grown`), and only the lines after them are
read; the new row is the whole file's. An import with `--since/--until` read only the lines of its window,
so the file counts as imported for that window alone: importing it again for a window
inside what was imported is skipped (`already imported`), while a new window (November
after October, or the whole file) reads it. Clusters already queued or in a set are
never queued twice, so lines read twice (windows that overlap) double no count.

Each file's windows are kept merged in `log_imports.windows` (JSON: `[since, until]`
pairs, `null` for an open end); a row without any (before windows were kept) counts
as the whole file.

This is the storage module of the `log_imports` table (created by migrations.py): it
reads the table with sqlite-utils and writes it in the same `ws.transaction()` as the
candidates the import queues (`queue_import`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.logs.candidates import merged_provenance
from curator.logs.lines import Window
from curator.logs.sources import Resume, Source, prefix_hasher
from curator.models import CandidateIn

if TYPE_CHECKING:
    from curator.logs.python_reader import FileRead
    from curator.workspace import Workspace

Span = tuple[str | None, str | None]  # [since, until): None is an open end
WHOLE: list[Span] = [(None, None)]


def merged(spans: Iterable[Span]) -> list[Span]:
    """The union of half-open `spans` as the fewest disjoint ones, in order; spans that
    touch (one ends where the next begins) are one."""
    out: list[Span] = []
    for since, until in sorted(spans, key=lambda s: (s[0] is not None, s[0] or "")):
        if out:
            last_since, last_until = out[-1]
            if last_until is None or since is None or since <= last_until:
                if last_until is not None and (until is None or until > last_until):
                    out[-1] = (last_since, until)
                continue
        out.append((since, until))
    return out


def covers(spans: Iterable[Span], span: Span) -> bool:
    """Is `span` inside the union of `spans`?"""
    since, until = span
    for a, b in merged(spans):
        starts_before = a is None or (since is not None and a <= since)
        ends_after = b is None or (until is not None and until <= b)
        if starts_before and ends_after:
            return True
    return False


def quick_key(path: Path | None) -> str | None:
    """A file's path, size and mtime: the same key means the same content, unread."""
    if path is None:
        return None
    st = path.stat()
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"


class KnownImports:
    """The workspace's imported files, as they were when the import began."""

    def __init__(self, ws: Workspace) -> None:
        self.windows: dict[str, list[Span]] = {}  # fingerprint -> merged windows
        self.quick: dict[str, str] = {}  # quick key -> fingerprint
        self.by_path: dict[str, list[dict[str, Any]]] = {}  # path -> its rows with block digests
        rows = ws.db.table("log_imports").rows_where(
            select="fingerprint, path, size, mtime_ns, windows, lines, blocks, content_bytes")
        for row in rows:
            self.windows[row["fingerprint"]] = _spans(row["windows"])
            if row["path"]:
                self.quick[f"{row['path']}|{row['size']}|{row['mtime_ns']}"] = row["fingerprint"]
                if row["blocks"] and row["content_bytes"] and row["lines"] is not None:
                    self.by_path.setdefault(row["path"], []).append(row)

    def imported(self, fingerprint: str, window: Window, alias: str | None = None) -> bool:
        """Was the file imported for all of `window` (or more)? `alias`: another
        fingerprint it was known by (a compressed file's stored bytes, FileRead.also_known_as)."""
        spans = self._spans(fingerprint, alias)
        return spans is not None and covers(spans, (window.since, window.until))

    def windows_of(self, fingerprint: str, alias: str | None = None) -> list[list[str | None]]:
        """The windows the file was imported for, as JSON has them."""
        return [list(span) for span in self._spans(fingerprint, alias) or []]

    def _spans(self, fingerprint: str, alias: str | None) -> list[Span] | None:
        found = [self.windows[fp] for fp in (fingerprint, alias) if fp is not None and fp in self.windows]
        return merged([span for spans in found for span in spans]) if found else None

    def grown(self, source: Source, window: Window) -> Resume | None:
        """Where to read on, if `source` is a file imported (for `window`) that has grown
        since: the same path, longer, and its first bytes the imported file's, to the
        last block digest and ending a line. None for anything else (read it whole)."""
        path = source.path
        if path is None or source.compression is not None or path.name == "-":
            return None
        try:
            size = path.stat().st_size
            rows = [r for r in self.by_path.get(str(path.resolve()), ())
                    if r["content_bytes"] < size and self.imported(r["fingerprint"], window)]
            if not rows:
                return None
            row = max(rows, key=lambda r: r["content_bytes"])
            length = row["content_bytes"]
            with path.open("rb") as fh:
                fh.seek(length - 1)
                if fh.read(1) != b"\n":  # the import ended inside a line being written
                    return None
            hasher = prefix_hasher(path, length)
        except OSError:  # gone or unreadable since: the read says so
            return None
        if [d.hex() for d in hasher.peek()] != json.loads(row["blocks"]):
            return None  # rewritten, not grown
        return Resume(length, row["lines"], hasher)

    def imported_unread(self, key: str | None, window: Window) -> str | None:
        """The fingerprint of the file of quick `key`, if it was imported for `window`."""
        fingerprint = self.quick.get(key) if key else None
        return fingerprint if fingerprint is not None and self.imported(fingerprint, window) else None


@dataclass
class Queued:
    """What an import changed in the queue: candidates added, found queued already
    (by exact text), and queued before and given this import's counts."""

    added: list[int] = field(default_factory=list)
    existing: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)


def queue_import(ws: Workspace, found: list[CandidateIn], refreshed: list[tuple[str, CandidateIn]],
                 reads: list[FileRead], window: Window, import_id: str) -> Queued:
    """Queue `found`, add the counts of `refreshed` ((norm of a queued candidate, this
    import's cluster of it)) and note the files as imported, in one transaction: a kill
    part-way leaves the workspace as before, so a rerun neither queues another --limit
    nor counts a log twice."""
    key = import_key(import_id, window)
    with ws.transaction():
        result = ws.insert_candidates(found)
        queued = Queued(result.added, result.existing)
        before = ws.log_counts(norm for norm, _item in refreshed)
        rows = []
        for norm, item in refreshed:
            if norm not in before:
                continue
            cid, count, provenance = before[norm]
            merged = merged_provenance(count, provenance, item, key)
            if merged is not None:
                rows.append((cid, *merged))
                queued.updated.append(cid)
        ws.set_log_counts(rows)
        record(ws, reads, window, len(queued.added))
    return queued


def import_key(import_id: str, window: Window) -> str:
    """What a candidate's provenance notes of each import that counted into it: the
    files' fingerprints (`import_id`) and the window read, if any."""
    if window.since is None and window.until is None:
        return import_id
    return f"{import_id}@{window.since or ''}..{window.until or ''}"


def record(ws: Workspace, reads: list[FileRead], window: Window, queued: int) -> None:
    """Note each file read as imported for `window`, besides the windows it was
    imported for before (in the caller's transaction, or its own)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    span = (window.since, window.until)
    wanted = [fp for read in reads for fp in (read.fingerprint, read.also_known_as) if fp]
    with ws.lock:
        before = {
            row["fingerprint"]: _spans(row["windows"])
            for row in ws.db.table("log_imports").rows_where(
                f"fingerprint IN ({', '.join('?' * len(wanted))})", wanted, select="fingerprint, windows"
            )
        } if wanted else {}
        rows = []
        for read in reads:
            path = read.source.path
            st = path.stat() if path else None
            rows.append(
                {
                    "fingerprint": read.fingerprint,
                    "label": read.source.label,
                    "path": str(path.resolve()) if path else None,
                    "size": st.st_size if st else None,
                    "mtime_ns": st.st_mtime_ns if st else None,
                    "format": read.format,
                    "lines": (read.after_lines or 0) + read.agg.lines,  # a grown log's too
                    "parsed": read.agg.parsed,
                    "imported_at": now,
                    "queued": queued,
                    "windows": json.dumps(merged([*before.get(read.fingerprint, []),
                                                  *before.get(read.also_known_as or "", []), span])),
                    "blocks": json.dumps(read.blocks) if read.blocks is not None else None,
                    "content_bytes": read.content_bytes,
                }
            )
        ws.db.table("log_imports").upsert_all(rows, pk="fingerprint")


def describe(windows: list[list[str | None]]) -> str | None:
    """`2026-10-01 to 2026-12-01`, `up to 2026-11-01`, `from 2026-11-01 on`; None for
    the whole file."""
    def day(t: str) -> str:
        return t.removesuffix("T00:00:00")

    parts = []
    for since, until in windows:
        if since is None:
            if until is None:
                return None
            parts.append(f"up to {day(until)}")
        elif until is None:
            parts.append(f"from {day(since)} on")
        else:
            parts.append(f"{day(since)} to {day(until)}")
    return ", ".join(parts)


def _spans(text: str | None) -> list[Span]:
    if not text:
        return WHOLE  # recorded before windows were kept: the whole file
    return [(since, until) for since, until in json.loads(text)]
