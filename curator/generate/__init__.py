"""Candidate questions from the corpus with a model (or offline from identifiers).

Public API: `generate(ws, **options) -> GenerateSummary` (see pipeline.py and
docs/generate.md). A run flows one way: slices (select passages) -> tasks (render
prompts, cache keys) -> client or batch (model calls) -> candidates (check each
question) -> `Workspace.add_candidates`; store.py holds the SQL of generate's tables.
"""

from curator.generate.pipeline import GenerateOptions, GenerateSummary, generate

__all__ = ["GenerateOptions", "GenerateSummary", "generate"]
