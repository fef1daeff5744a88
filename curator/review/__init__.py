"""The review loop without textual (`curator review` and its second pass drive it).

One way, bottom up:

- `card.py`: `Row`, `Card` (what a card shows, the labels being built, why it cannot be
  kept yet) and `CardMaker`, which builds cards from a candidate (pooled suggestions,
  suggested slice and its defaults) or from an existing case, on a reading connection.
- `writes.py`: `writing` (an I/O failure becomes `WriteFailed`), `reconcile` (crash
  repair), the `source` a kept or edited case records.
- `session.py`: `ReviewSession`: leases, the prefetched queue, keep / bin / skip / undo,
  relabel and revise through `QuestionSet`.
"""

from curator.review.card import SLICE_HINTS, Card, CardMaker, IncompleteCase, Row
from curator.review.session import ReviewSession, Stats, Step
from curator.review.writes import WriteFailed, edited_source, reconcile

__all__ = [
    "SLICE_HINTS", "Card", "CardMaker", "IncompleteCase", "ReviewSession", "Row", "Stats", "Step",
    "WriteFailed", "edited_source", "reconcile",
]
