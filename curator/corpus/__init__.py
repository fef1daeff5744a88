"""Corpus importers: documents chunked on headings, pre-chunked JSONL, BEIR, git history.

`add_paths(ws, paths)` is what `curator corpus add` calls. Data flows one way: sources
and git (files, revisions) -> chunker (blocks, html, frontmatter: text to chunks) ->
importer (chunks to `DocRevision` records) -> `Workspace.import_documents`.
"""

from curator.corpus.importer import add_paths

__all__ = ["add_paths"]
