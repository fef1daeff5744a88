"""In-card search (`/`) through Pilot: every hit moves to the top in search order, rows
already on the card included, and the message says how many were found."""

from __future__ import annotations

import pytest

from curator.tui.app import ReviewApp
from tests.tui.conftest import settle, type_text

pytestmark = pytest.mark.anyio
SIZE = (120, 40)


async def test_search_reranks_existing_rows_to_the_top_in_search_order(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        card = app.screen.current
        before = [r.id for r in card.rows]
        assert len(before) >= 2
        last = card.rows[-1]
        text = last.heading or last.title
        expected = [r.id for r in app.screen.session.search_rows(text)]
        assert last.id in expected and expected.index(last.id) < len(before) - 1
        old_sources = list(last.sources)
        await pilot.press("slash")
        await type_text(pilot, text)
        await pilot.press("enter")
        await settle(pilot)
        after = [r.id for r in card.rows]
        assert after[: len(expected)] == expected  # every hit on top, in search order
        assert sorted(after) == sorted(set(before) | set(expected))  # nothing lost, no duplicate
        moved = card.row(last.id)
        assert moved is last  # the same row object: labels and sources kept
        assert moved.sources[: len(old_sources)] == old_sources and moved.sources[-1][0] == "your search"
        said = str(app.screen.query_one("#message").render())
        assert f"found {len(expected)} passage(s)" in said and "at the top" in said
        first_row = str(app.screen.query_one("#passages").render()).splitlines()[0]
        assert expected[0] in first_row
