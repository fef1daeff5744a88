"""Candidate questions from the corpus with a model (or offline from identifiers).

Public API: `generate(ws, **options) -> GenerateSummary` (see pipeline.py and
docs/generate.md).
"""

from curator.generate.pipeline import GenerateOptions, GenerateSummary, generate

__all__ = ["GenerateOptions", "GenerateSummary", "generate"]
