"""The review app (`curator review`): the only package that imports textual."""

from __future__ import annotations


def run_review(ws, **options) -> None:
    """Open the review app on `ws`; options are those of `curator.review.ReviewSession`."""
    from curator.tui.app import ReviewApp

    ReviewApp(ws, **options).run()
