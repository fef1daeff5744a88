"""curator: build, review and keep retrieval-evaluation question sets."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curator.scoring import ScoreResult

__version__ = "0.1.0"


def score(set_or_cases: Any, ranked: Any, **options: Any) -> ScoreResult:
    """Score cases against a retriever's ranked output; see `curator.scoring.score`."""
    from curator.scoring import score as _score

    return _score(set_or_cases, ranked, **options)
