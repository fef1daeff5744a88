"""The app `curator serve` runs for each browser tab: it asks who is reviewing first."""

from __future__ import annotations

import pytest

from curator.tui.app import ReviewApp
from tests.tui.conftest import set_files, settle, type_text

pytestmark = pytest.mark.anyio


async def test_the_name_is_asked_then_recorded(rws):
    rws.config.reviewer = "configured"
    app = ReviewApp(rws, blink=False, set_name="main", ask_reviewer=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        field = app.screen.query_one("#modal-input")
        assert field.value == "configured"  # offered from curator.toml
        await pilot.press("ctrl+u")
        await type_text(pilot, "ana@laptop")
        await pilot.press("enter")
        await pilot.pause()
        assert "without @" in str(app.screen.query_one("#modal-error").render())
        await pilot.press("ctrl+u")
        await type_text(pilot, "bea")
        await pilot.press("enter")
        await settle(pilot)
        assert app.session is not None and app.session.lease_owner.startswith("bea@")
        await pilot.press("p", "k")
        await settle(pilot)
    (case,), _ = set_files(rws)
    assert case["reviewer"] == "bea"


async def test_escape_on_the_name_leaves_without_a_session(rws):
    app = ReviewApp(rws, blink=False, ask_reviewer=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
    assert app.session is None
    assert rws.db.execute("SELECT count(*) FROM candidates WHERE lease_owner IS NOT NULL").fetchone()[0] == 0
