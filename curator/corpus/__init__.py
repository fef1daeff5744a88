"""Corpus importers: documents chunked on headings, pre-chunked JSONL, BEIR, git history.

`add_paths(ws, paths)` is what `curator corpus add` calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from curator.corpus.records import DocRevision, ImportReport, PassageRecord

if TYPE_CHECKING:
    from curator.corpus.importer import add_paths

__all__ = ["DocRevision", "ImportReport", "PassageRecord", "add_paths"]


def __getattr__(name: str) -> Any:
    # the importers (with the chunker and git) load on first use: every command
    # imports the records through the workspace, few import a corpus (25 ms)
    if name == "add_paths":
        from curator.corpus.importer import add_paths

        return add_paths
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
