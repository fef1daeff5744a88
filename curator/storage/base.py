"""The connection every storage module shares: one sqlite-utils Database, one lock."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import curator._sqlite  # noqa: F401, I001  (first: sqlite_utils without pandas)

# isort: split
import sqlite_utils


class Storage:
    def __init__(self, db: sqlite_utils.Database) -> None:
        self.db = db
        # One connection is shared by the app's worker threads; writes are serialised.
        self.lock = threading.RLock()

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

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.lock:
            self.db.table("meta").upsert({"key": key, "value": value}, pk="key")
