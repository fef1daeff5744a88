"""The set browser: relabel, re-slice, edit and retire a case, each with a required reason."""

from __future__ import annotations

import pytest

from curator.review import ReviewSession
from curator.tui.app import ReviewApp
from tests.tui.conftest import set_files, settle, type_text

pytestmark = pytest.mark.anyio
SIZE = (120, 40)
E1042 = "errors/carrier-e1042.md#carrier-e1042-label-rejected"


def keep_first(ws) -> str:
    session = ReviewSession(ws)
    session.start()
    card = session.next_card()
    card.set_label(E1042, "primary")
    case = session.keep(card)
    session.close()
    return case.query_id


async def test_relabel_in_browser_asks_for_a_reason(rws):
    qid = keep_first(rws)
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        assert qid in str(app.screen.query_one("#history").render())
        await pilot.press("l")  # relabel on the card screen
        await settle(pilot)
        assert app.screen.__class__.__name__ == "ReviseScreen"
        await pilot.press("down", "o", "k")
        await settle(pilot)
        await pilot.press("enter")  # an empty reason is refused
        await settle(pilot)  # not one pause: on a loaded machine the refusal came later once
        assert "required" in str(app.screen.query_one("#modal-error").render())
        await type_text(pilot, "faq also answers it")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.__class__.__name__ == "BrowserScreen"
        assert "faq also answers it" in str(app.screen.query_one("#history").render())
    cases, changes = set_files(rws)
    assert [(c["query_id"], c["rev"]) for c in cases] == [(qid, 1), (qid, 2)]
    assert len(cases[1]["relevant"]) == 2 and cases[1]["relevant"][0] == {"id": E1042, "role": "primary", "grade": 2}
    assert changes[1]["action"] == "relabel" and changes[1]["reason"] == "faq also answers it"


async def test_reslice_edit_retire_and_filter(rws):
    qid = keep_first(rws)
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("s", "ctrl+u", "2", "enter")
        await type_text(pilot, "it paraphrases the page")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("e", "ctrl+u")
        await type_text(pilot, "meaning of CARRIER-E1042")
        await pilot.press("enter")
        await type_text(pilot, "clearer wording")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("x")
        await pilot.press("escape")  # cancelling the reason changes nothing
        await settle(pilot)
        assert len(set_files(rws)[0]) == 3
        await pilot.press("x")
        await type_text(pilot, "duplicate")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("slash")
        await type_text(pilot, "status:active")
        await pilot.pause()
        assert app.screen.query_one("#cases").row_count == 0
    cases, changes = set_files(rws)
    assert [c["rev"] for c in cases] == [1, 2, 3, 4]
    assert cases[1]["slice"] == "paraphrase" and cases[2]["query"] == "meaning of CARRIER-E1042"
    assert cases[3]["status"] == "retired"
    assert [(e["action"], e["reason"]) for e in changes[1:]] == [
        ("reslice", "it paraphrases the page"), ("edit", "clearer wording"), ("retire", "duplicate")]
    assert all(c["query_id"] == qid for c in cases)
