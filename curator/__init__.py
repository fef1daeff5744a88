"""curator: build, review and keep retrieval-evaluation question sets."""

__version__ = "0.1.0"


def score(set_or_cases, ranked, **options):
    """Score cases against a retriever's ranked output; see `curator.scoring.score`."""
    from curator.scoring import score as _score

    return _score(set_or_cases, ranked, **options)
