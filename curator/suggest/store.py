"""Passage embeddings in the workspace database: the one suggest module that issues SQL.

One `embeddings` row per (model, passage text hash): the vector as little-endian float32
bytes. Keyed by text, not passage id, so a passage unchanged across revisions (or two
passages with the same text) is embedded once, and changing the model starts a new set.
The table is created on first use. Writes run in `ws.transaction()`, reads under `ws.lock`.

sqlite-vec was considered first: it needs `sqlite3.Connection.enable_load_extension`,
which many Python builds (pyenv's default, macOS system Python) lack, so the vectors are
plain BLOBs and the search is an exact numpy dot product over them (dense.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from curator.workspace import Workspace

TABLE = "embeddings"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (model TEXT NOT NULL, text_hash TEXT NOT NULL, "
    "dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, text_hash))"
)


def ensure_table(ws: Workspace) -> None:
    with ws.transaction():
        ws.db.execute(_CREATE)


def current_passages(ws: Workspace) -> list[tuple[str, str, str]]:
    """(id, revision, text) of every current passage."""
    with ws.lock:
        return [(r[0], r[1], r[2]) for r in ws.db.execute(
            "SELECT id, revision, text FROM passages WHERE is_current = 1 ORDER BY doc_id, ordinal")]


def known_hashes(ws: Workspace, model: str) -> set[str]:
    ensure_table(ws)
    with ws.lock:
        return {r[0] for r in ws.db.execute(f"SELECT text_hash FROM {TABLE} WHERE model = ?", [model])}


def put_vectors(ws: Workspace, model: str, rows: Iterable[tuple[str, int, bytes]]) -> None:
    """Store (text_hash, dim, float32 bytes) rows for `model`."""
    with ws.transaction():
        ws.db.execute(_CREATE)
        ws.db.conn.executemany(
            f"INSERT OR REPLACE INTO {TABLE} (model, text_hash, dim, vector) VALUES (?, ?, ?, ?)",
            [(model, h, d, v) for h, d, v in rows],
        )


def vectors(ws: Workspace, model: str) -> dict[str, bytes]:
    """text_hash -> vector bytes of `model`."""
    ensure_table(ws)
    with ws.lock:
        return {r[0]: r[1] for r in ws.db.execute(f"SELECT text_hash, vector FROM {TABLE} WHERE model = ?", [model])}


def count(ws: Workspace, model: str) -> int:
    ensure_table(ws)
    with ws.lock:
        return int(ws.db.execute(f"SELECT count(*) FROM {TABLE} WHERE model = ?", [model]).fetchone()[0])


def passage_names(ws: Workspace, ids: list[str]) -> list[tuple[str, str, str, str]]:
    """(id, revision, path or document id, heading) of the current passages among `ids` (a
    card's proposed passages: tens, bounded by the pool's depth), each document's passages
    in order: what an exact name in a query can point at."""
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    with ws.lock:
        return [(r[0], r[1], r[2], r[3]) for r in ws.db.execute(
            "SELECT id, revision, coalesce(path, doc_id), coalesce(heading, '') FROM passages "
            f"WHERE is_current = 1 AND id IN ({marks}) ORDER BY doc_id, ordinal", ids)]
