"""Each key path of the review card, driven by Pilot; assertions on the files and the DB."""

from __future__ import annotations

import pytest

from curator.models import Case
from curator.tui.app import ReviewApp
from tests.tui.conftest import set_files, settle, type_text

pytestmark = pytest.mark.anyio
SIZE = (120, 40)
E1042 = "errors/carrier-e1042.md#carrier-e1042-label-rejected"


def question(app) -> str:
    return str(app.screen.query_one("#question").render())


def message(app) -> str:
    return str(app.screen.query_one("#message").render())


async def test_keep_with_labels_writes_case_changelog_and_decision(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "CARRIER-E1042" in question(app)
        await pilot.press("p", "t", "k")  # clicked passage primary, tag regression, keep
        await settle(pilot)
        assert "dhl cutoff" in question(app)  # the next card shows only after the write
    cases, changes = set_files(rws)
    assert len(cases) == 1 and len(changes) == 1
    case = cases[0]
    assert case["query"] == "what does CARRIER-E1042 mean"
    assert case["slice"] == "exact_identifier"  # the candidate's suggested slice
    assert case["relevant"] == [{"id": E1042, "role": "primary", "grade": 2}]
    assert case["tags"] == ["regression"]
    assert case["source"]["candidate_id"] == 1 and case["source"]["count"] == 37
    assert case["reviewer"] == "tester"
    assert changes[0]["action"] == "add" and changes[0]["query_id"] == case["query_id"]
    cand = rws.candidate(1)
    assert cand.state == "kept" and cand.query_id == case["query_id"] and cand.set_name == "main"
    assert [d.action for d in rws.decisions(1)] == ["keep"]


async def test_keep_refused_until_complete(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("x")  # bin the first; the second has no suggested slice
        await settle(pilot)
        assert "dhl cutoff" in question(app)
        await pilot.press("k")
        await settle(pilot)
        assert "not kept" in message(app) and "slice" in message(app)
        assert "dhl cutoff" in question(app)  # still the same card
        await pilot.press("1", "k")  # a slice, but no primary yet
        await settle(pilot)
        assert "primary" in message(app)
        assert set_files(rws) == ([], [])
        await pilot.press("p", "k")
        await settle(pilot)
    cases, _ = set_files(rws)
    assert [c["query"] for c in cases] == ["when is the dhl cutoff"]
    assert rws.candidate(2).state == "kept"


async def test_bin_and_skip_are_recorded_and_skip_comes_back_last(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("s")  # skip candidate 1
        await settle(pilot)
        await pilot.press("x")  # bin candidate 2
        await settle(pilot)
        assert "label backlog" in question(app)
    assert set_files(rws) == ([], [])
    assert rws.candidate(1).state == "skipped" and rws.candidate(2).state == "binned"
    assert [(d.action, d.reviewer) for d in rws.decisions(1)] == [("skip", "tester")]
    assert rws.candidate(3).state == "pending"
    # leases were given back on quit, and a new session serves pending before skipped
    assert rws.candidate(3).model_dump().get("state") == "pending"
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "label backlog" in question(app)
        await pilot.press("x")
        await settle(pilot)
        assert "CARRIER-E1042" in question(app)


def kept_undone_kept_again(ws) -> list[dict]:
    """The files and the database after: keep card 1, bin card 2, undo both, keep 1 again."""
    cases, changes = set_files(ws)
    assert [(c["query_id"], c["rev"], c["status"]) for c in cases] == [
        ("what-does-carrier-e1042-mean", 1, "active"),
        ("what-does-carrier-e1042-mean", 2, "retired"),
        ("what-does-carrier-e1042-mean", 3, "active"),  # the same candidate kept again: its id back
    ]
    assert [(e["action"], e["reason"]) for e in changes] == [("add", ""), ("retire", "undo"), ("relabel", "kept again")]
    assert [d.action for d in ws.decisions(1)] == ["keep", "undo", "keep"]
    assert ws.candidate(1).query_id == "what-does-carrier-e1042-mean"
    assert [d.action for d in ws.decisions(2)] == ["bin", "undo"]
    assert ws.candidate(2).state == "pending"
    return cases


async def test_undo_after_keep_appends_a_retiring_rev_and_restores_the_card(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "k")
        await settle(pilot)
        await pilot.press("x")  # bin the second
        await settle(pilot)
        await pilot.press("u")  # undo the bin
        await settle(pilot)
        assert "dhl cutoff" in question(app)
        await pilot.press("u")  # undo the keep
        await settle(pilot)
        assert "CARRIER-E1042" in question(app)
        assert "1 primary" in str(app.screen.query_one("#labels").render())  # labels kept
        await pilot.press("k")  # keep again: a new query_id, never a reused one
        await settle(pilot)
    kept_undone_kept_again(rws)


async def test_undo_after_a_restart_takes_back_the_last_sessions_decisions(rws):
    first = ReviewApp(rws, blink=False)
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "g", "k")  # keep the first (primary, grade 3)
        await settle(pilot)
        await pilot.press("x")  # bin the second
        await settle(pilot)
    again = ReviewApp(rws, blink=False)  # a new session: its own undo stack is empty
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "drain a label backlog" in question(again)
        await pilot.press("u")  # the bin of the last session
        await settle(pilot)
        assert "dhl cutoff" in question(again)
        await pilot.press("u")  # then its keep: retired, the card back with its labels
        await settle(pilot)
        assert "CARRIER-E1042" in question(again)
        assert "1 primary" in str(again.screen.query_one("#labels").render())
        await pilot.press("u")  # nothing earlier stands
        await settle(pilot)
        assert "nothing to undo" in message(again)
        await pilot.press("k")  # kept again with the labels it had, under a new query_id
        await settle(pilot)
    cases = kept_undone_kept_again(rws)
    assert cases[2]["relevant"] == [{"id": E1042, "role": "primary", "grade": 3}]
    assert rws.decisions(2)[-1].detail["earlier_session"] is True


async def test_edit_explanation_and_search(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e", "ctrl+u")
        await type_text(pilot, "what does error CARRIER-E1042 mean")
        await pilot.press("enter", "w")
        await type_text(pilot, "the error page says it")
        await pilot.press("enter", "slash")
        await type_text(pilot, "quarantine")
        await pilot.press("enter")
        await settle(pilot)
        first_row = str(app.screen.query_one("#passages").render()).splitlines()[:2]  # id, then why
        assert "runbooks/parser.md#retries" in first_row[0] and "your search" in first_row[1]
        await pilot.press("o", "down", "p", "k")  # parser passage secondary, E1042 primary
        await settle(pilot)
    cases, _ = set_files(rws)
    case = cases[0]
    assert case["query"] == "what does error CARRIER-E1042 mean"
    assert case["explanation"] == "the error page says it"
    assert {r["id"]: r["role"] for r in case["relevant"]} == {
        "runbooks/parser.md#retries": "secondary", E1042: "primary"}


async def test_negative_case(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("p", "n", "k")  # negative clears labels and picks the negative slice
        await settle(pilot)
    case = set_files(rws)[0][0]
    assert case["expect_empty"] is True and case["relevant"] == [] and case["slice"] == "negative"


async def test_freshness_pin_and_max_age(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "5", "k")  # choosing freshness pins the revision shown
        await settle(pilot)
        await pilot.press("p", "5", "a")  # a max age replaces the pin
        await type_text(pilot, "abc")
        await pilot.press("enter")  # refused: not a number
        await pilot.press("ctrl+u")
        await type_text(pilot, "30")
        await pilot.press("enter", "k")
        await settle(pilot)
    first, second = set_files(rws)[0]
    assert first["freshness"] == {"revision": "rev1aaaa"}
    assert first["relevant"][0]["revision"] == "rev1aaaa" and first["slice"] == "freshness"
    assert second["freshness"] == {"max_age_days": 30}


async def test_grade_and_max_rank(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")  # nothing labelled yet: refused
        await pilot.pause()
        assert "primary (p) or secondary (o) first" in message(app)
        await pilot.press("p", "g")  # primary: 2 -> 3
        await pilot.press("down", "o", "g", "g", "g")  # secondary: 1 -> 2 -> 3 -> 1 (its default)
        await pilot.press("up", "o", "p", "g", "g")  # a new role starts again from its default: 2 -> 3 -> 1
        await pilot.press("m")
        await type_text(pilot, "0")
        await pilot.press("enter")  # refused: ranks start at 1
        await pilot.press("ctrl+u")
        await type_text(pilot, "5")
        await pilot.press("enter", "k")
        await settle(pilot)
    (case,), _ = set_files(rws)
    assert case["relevant"] == [
        {"id": E1042, "role": "primary", "grade": 1},
        {"id": "faq.md#pickups", "role": "secondary", "grade": 1},
    ]
    assert case["max_rank"] == 5
    relabel = ReviewApp(rws, blink=False).session.card_for_case(Case.model_validate(case))
    assert relabel.grades == {E1042: 1} and relabel.max_rank == 5  # the browser's relabel starts from them


async def test_keymap_remaps_keep(rws):
    rws.config.keymap = {"keep": "y"}
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "k")
        await settle(pilot)
        assert set_files(rws) == ([], [])
        await pilot.press("y")
        await settle(pilot)
    assert len(set_files(rws)[0]) == 1


async def test_help_lists_every_binding(rws):
    from curator.tui.screens.browser import BrowserScreen
    from curator.tui.screens.review import ReviewScreen
    from curator.tui.screens.revise import ReviseScreen
    from curator.tui.widgets.passages import PassageList

    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        text = "\n".join(str(s.render()) for s in app.screen.query(".help-section"))
        for binding in [*ReviewScreen.BINDINGS, *BrowserScreen.BINDINGS, *ReviseScreen.BINDINGS,
                        *PassageList.BINDINGS]:
            assert binding.id in text and binding.tooltip
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ReviewScreen"


async def test_preview_scrolls_with_keys(rws):
    from curator.tui.widgets.preview import PassageText

    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=(40, 32)) as pilot:  # a preview body shorter than the text (80x24 hides it)
        await settle(pilot)
        body = app.screen.query_one(PassageText)
        last = len(body.lines) - body.size.height  # the top line when scrolled to the end
        assert last >= 1 and body.render_line(0).text.startswith("CARRIER-E1042 means")
        await pilot.press("tab", "down")
        await pilot.pause()
        assert app.focused is body
        assert body.render_line(0).text.rstrip() == body.lines[1]
        for _ in range(last + 2):  # past the end: stays there
            await pilot.press("down")
        await pilot.pause()
        assert body.render_line(0).text.rstrip() == body.lines[last]
        for _ in range(last):
            await pilot.press("up")
        await pilot.pause()
        assert body.render_line(0).text.startswith("CARRIER-E1042 means")


def test_the_relabel_screen_has_its_own_module_and_the_card_module_stays_small():
    from pathlib import Path

    import curator.tui.screens.review as review
    from curator.tui.screens.revise import ReviseScreen

    assert ReviseScreen.__module__ == "curator.tui.screens.revise"
    assert not hasattr(review, "ReviseScreen")
    assert len(Path(review.__file__).read_text().splitlines()) < 450
