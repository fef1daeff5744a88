"""Corpus importers: documents chunked on headings, pre-chunked JSONL, BEIR, git history.

`add_paths(ws, paths)` is what `curator corpus add` calls.
"""

from __future__ import annotations

from curator.corpus.importer import add_paths
from curator.corpus.records import DocRevision, ImportReport, PassageRecord

__all__ = ["DocRevision", "ImportReport", "PassageRecord", "add_paths"]
