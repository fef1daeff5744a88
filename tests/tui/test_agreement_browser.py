"""The blind second pass in the app, and the set browser's agreement and friction fixes:
`d` disagreements settled by side or relabel, `m` cases on gone passages relabelled with
the old text, a filter that keeps the cursor on its case, and columns that fit 120 cells.
Pilot on a real workspace; the files are checked after."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from textual.widgets import DataTable
from textual.widgets._footer import FooterKey

from curator.agreement import agreement
from curator.corpus.importer import add_paths
from curator.review import ReviewSession
from curator.secondpass import SecondPassSession, items, todo
from curator.tui.app import ReviewApp
from curator.tui.widgets.lines import Lines
from curator.tui.widgets.passages import PassageList
from tests.tui.conftest import lines, screen_rows, set_files, settle, type_text

pytestmark = pytest.mark.anyio
SIZE = (120, 40)
E1042 = "errors/carrier-e1042.md#carrier-e1042-label-rejected"
FAQ = "faq.md#pickups"
QUESTION = "what does CARRIER-E1042 mean"


def first_review(ws) -> list[str]:
    """ana keeps all three candidates, each with its first row as the primary."""
    session = ReviewSession(ws, reviewer="ana")
    session.start()
    kept = []
    while (card := session.next_card()) is not None:
        card.apply_slice(card.slice or "paraphrase")
        card.set_label(E1042 if card.query == QUESTION else card.rows[0].id, "primary")
        kept.append(session.keep(card).query_id)
    session.close()
    return kept


def bo_disagrees(ws) -> None:
    """bo's blind judgment of the E1042 case: paraphrase, with the faq as a secondary; the
    other items the same as ana."""
    session = SecondPassSession(ws, reviewer="bo")
    session.start()
    while (card := session.next_card()) is not None:
        first = ws.question_set().read().cases
        case = next(c for c in first.values() if c.query == card.query)
        if card.query == QUESTION:
            card.apply_slice("paraphrase")
            card.set_label(E1042, "primary")
            if card.row(FAQ) is None:
                session.add_search(card, "pickups")
            card.set_label(FAQ, "secondary")
        else:
            card.apply_slice(case.slice)
            for rel in case.relevant:
                if card.row(rel.id) is None:
                    session.add_search(card, rel.id.split("#")[1].replace("-", " "))
                card.set_label(rel.id, rel.role)
        session.keep(card)
    session.close()


def footer_actions(app) -> list[str]:
    """The actions of the keys the footer shows."""
    return [key.action for key in app.screen.query(FooterKey)]


async def test_the_first_pass_footer_offers_the_browser(rws):
    app = ReviewApp(rws, blink=False, reviewer="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "open_browser" in footer_actions(app)
        await pilot.press("b")
        await settle(pilot)
        assert app.screen.__class__.__name__ == "BrowserScreen"


def judgments_file(ws) -> list[dict]:
    return lines(ws.root / "datasets" / "main" / "judgments.jsonl")


async def test_second_pass_in_the_app_is_blind_and_writes_judgments(rws):
    first_review(rws)
    cases_before = (rws.root / "datasets/main/cases.jsonl").read_bytes()
    app = ReviewApp(rws, blink=False, session=SecondPassSession(rws, reviewer="bo"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        card = app.screen.current
        assert card is not None and card.slice is None and card.labels == {}
        assert "slice –" in str(app.screen.query_one("#labels").render())
        assert str(app.screen.query_one("#stats").render()).startswith("second pass · blind · main · bo")
        shown = card.query
        first_row = card.rows[0].id
        await pilot.press("2", "p", "k")  # paraphrase, the highlighted row primary, keep
        await settle(pilot)
        assert app.screen.current is not None and app.screen.current.query != shown
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("u")  # the bin is taken back
        await settle(pilot)
        assert "open_browser" not in footer_actions(app) and "decide('keep')" in footer_actions(app)
        screen = app.screen
        await pilot.press("b")  # the browser would show ana's labels: off, and off the footer
        await settle(pilot)
        assert app.screen is screen and app.screen.__class__.__name__ == "ReviewScreen"
        await pilot.press("i")  # no question is added in a second pass either
        await settle(pilot)
        assert app.screen is screen
    assert (rws.root / "datasets/main/cases.jsonl").read_bytes() == cases_before
    written = judgments_file(rws)
    assert [j["decision"] for j in written] == ["keep", "bin", "undo"]
    keep = written[0]
    assert keep["query"] == shown and keep["reviewer"] == "bo" and keep["first_reviewer"] == "ana"
    assert keep["slice"] == "paraphrase" and keep["relevant"] == [{"id": first_row, "role": "primary", "grade": 2}]


async def test_the_second_pass_draws_its_next_card_made_ahead_as_a_fresh_start_would(rws):
    """The second pass shares the first review's drawing path: while a card shows, the next
    item's card is prepared and its lines made ahead; after a bin the screen shows that
    item, blind, exactly as a new second pass drawing it from scratch does."""
    first_review(rws)
    order = [i.query for i in todo(rws, "main", "bo", items(rws, "main"))]
    app = ReviewApp(rws, blink=False, session=SecondPassSession(rws, reviewer="bo"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)  # the prefetch, then the next card made ahead
        await settle(pilot)
        assert app.screen.current is not None and app.screen.current.query == order[0]
        upcoming = app.session.upcoming()
        passages = app.screen.query_one(PassageList)
        assert upcoming is not None and upcoming.query == order[1]
        assert passages._next is not None and passages._next[0] is upcoming
        await pilot.press("x")
        await settle(pilot)
        assert app.screen.current is upcoming
        assert app.screen.query_one("#question", Lines).render().plain == order[1]
        assert "slice – · 0 primary, 0 secondary" in app.screen.query_one("#labels", Lines).render().plain
        drawn = screen_rows(app, 2, 38)  # the card: under the stats, above the message and footer
        assert any(upcoming.rows[0].id in "".join(text for text, _ in row) for row in drawn)
    again = ReviewApp(rws, blink=False, session=SecondPassSession(rws, reviewer="bo"))
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.screen.current is not None and again.screen.current.query == order[1]
        assert screen_rows(again, 2, 38) == drawn


async def test_d_lists_disagreements_and_2_takes_the_second_side(rws):
    first_review(rws)
    bo_disagrees(rws)
    qid = next(c.query_id for c in rws.question_set().read().cases.values() if c.query == QUESTION)
    app = ReviewApp(rws, blink=False, reviewer="cy")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        assert "1 open disagreement(s)" in str(app.screen.query_one("#browser-message").render())
        await pilot.press("d")
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        history = str(app.screen.query_one("#history").render())
        assert "disagreement" in history and "bo: keep · paraphrase" in history
        await pilot.press("2")
        await settle(pilot)
        await type_text(pilot, "the faq answers it too")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.query_one(DataTable).row_count == 0  # settled: off the list
    cases, changes = set_files(rws)
    latest = cases[-1]
    assert latest["query_id"] == qid and latest["rev"] == 2 and latest["slice"] == "paraphrase"
    assert {r["id"]: r["role"] for r in latest["relevant"]} == {E1042: "primary", FAQ: "secondary"}
    assert latest["reviewer"] == "cy"
    reason = changes[-1]["reason"]
    assert reason.startswith("adjudicated: ana vs bo") and "took bo's side" in reason
    assert reason.endswith("the faq answers it too")
    assert [d.resolved for d in agreement(rws).disagreements] == [reason]


async def test_relabelling_a_disagreement_is_recorded_as_adjudicated(rws):
    first_review(rws)
    bo_disagrees(rws)
    app = ReviewApp(rws, blink=False, reviewer="cy")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("d", "l")
        await settle(pilot)
        assert app.screen.__class__.__name__ == "ReviseScreen"
        await pilot.press("down", "o", "k")
        await settle(pilot)
        await type_text(pilot, "both had a point")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.__class__.__name__ == "BrowserScreen"
    changes = set_files(rws)[1]
    assert changes[-1]["action"] == "relabel"
    assert changes[-1]["reason"].startswith("adjudicated: ana vs bo")
    assert changes[-1]["reason"].endswith("relabelled; both had a point")
    assert all(d.resolved for d in agreement(rws).disagreements)


async def test_filtering_keeps_the_cursor_on_its_case(rws):
    kept = first_review(rws)
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("down")  # the second case, the dhl one
        table = app.screen.query_one(DataTable)
        assert table.cursor_row == 1
        second = kept[1]
        await pilot.press("slash")
        await type_text(pilot, "l")  # the dhl and backlog cases, not the E1042 one above them
        await pilot.press("enter")
        await pilot.pause()
        assert table.row_count == 2
        assert table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value == second  # still on the case it was on (now row 0)
        await pilot.press("l")  # and l opens that case, not the one at the old index
        await settle(pilot)
        assert app.screen.current.case.query_id == second
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("slash", "ctrl+u")
        await type_text(pilot, "what")  # the case under the cursor is filtered out: the first match
        await pilot.press("enter")
        await pilot.pause()
        assert table.row_count == 1 and table.cursor_row == 0
        await pilot.press("l")
        await settle(pilot)
        assert app.screen.current.case.query == QUESTION


async def test_every_column_shows_at_120_columns(rws):
    session = ReviewSession(rws, reviewer="ana")
    session.start()
    card = session.next_card()
    card.query = "what does CARRIER-E1042 mean when a label for the Lisbon depot is rejected twice in a row"
    card.set_label(E1042, "primary")
    qid = session.keep(card).query_id
    session.close()
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        # nothing to scroll sideways to: rev and question are in view
        assert table.virtual_size.width <= table.scrollable_content_region.width
        row = [str(cell) for cell in table.get_row_at(0)]
        assert row[3] == "1" and row[4].startswith("what does CARRIER")
        assert row[0] == qid or row[0].endswith(qid[-5:])  # an id cut keeps its tail


async def test_m_offers_cases_on_gone_passages_with_the_old_text(rws):
    docs = rws.root / "docs"
    docs.mkdir()
    page = docs / "pickups.md"
    page.write_text("# Pickups\n\nPickups are booked through the carrier portal before 16:00.\n")
    add_paths(rws, [docs])
    session = ReviewSession(rws, reviewer="ana")
    session.start()
    card = session.next_card()
    card.rows.extend(session.search_rows("pickups carrier portal"))
    card.set_label("pickups.md#pickups", "primary")
    card.set_label(E1042, None)
    qid = session.keep(card).query_id
    session.close()
    page.write_text("# Booking a pickup\n\nPickups are booked in the new portal before 17:00.\n")
    add_paths(rws, [docs])  # the heading changed: the labelled id now exists only in history
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        assert "no longer has: m lists them" in str(app.screen.query_one("#browser-message").render())
        await pilot.press("m")
        await pilot.pause()
        assert app.screen.query_one(DataTable).row_count == 1
        assert "pickups.md#pickups" in str(app.screen.query_one("#history").render())
        await pilot.press("l")
        await settle(pilot)
        relabel = app.screen.current
        assert relabel.case.query_id == qid
        gone = relabel.rows[0]
        assert gone.id == "pickups.md#pickups" and gone.reason == "gone: old text"
        assert "before 16:00" in gone.text  # the old passage's text
        assert "pickups.md#booking-a-pickup" in [r.id for r in relabel.rows]  # the current candidate
        await pilot.press("c")  # clear the labels, then label the current passage
        index = [r.id for r in relabel.rows].index("pickups.md#booking-a-pickup")
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("p", "k")
        await settle(pilot)
        await type_text(pilot, "heading renamed")
        await pilot.press("enter")
        await settle(pilot)
    latest = set_files(rws)[0][-1]
    assert latest["rev"] == 2 and [r["id"] for r in latest["relevant"]] == ["pickups.md#booking-a-pickup"]
    assert json.dumps(latest)


def ana_bins_one_bo_keeps_it(ws) -> str:
    """ana keeps QUESTION and bins the other candidates; bo judges every item and keeps
    them all (the binned ones as paraphrase, their first row primary). Returns the first
    binned candidate's question."""
    session = ReviewSession(ws, reviewer="ana")
    session.start()
    binned = []
    while (card := session.next_card()) is not None:
        if card.query == QUESTION:
            card.apply_slice(card.slice or "paraphrase")
            card.set_label(E1042, "primary")
            session.keep(card)
        else:
            binned.append(card.query)
            session.bin(card)
    session.close()
    second = SecondPassSession(ws, reviewer="bo")
    second.start()
    while (card := second.next_card()) is not None:
        if card.query == QUESTION:
            card.apply_slice("paraphrase")
            card.set_label(E1042, "primary")
        else:
            card.apply_slice("paraphrase")
            card.set_label(card.rows[0].id, "primary")
        second.keep(card)
    second.close()
    return sorted(binned)[0]


async def _settle_binned(rws, key: str, reason: str) -> tuple[str, str]:
    """In the browser's `d` list, highlight the first binned candidate, press `key` and give
    `reason`; returns the browser's message and the row's question."""
    app = ReviewApp(rws, blink=False, reviewer="cy")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("d")
        await pilot.pause()
        screen = app.screen
        rows = [c.query_id for c in screen.shown]
        assert any(r.startswith("candidate:") for r in rows), rows
        screen.query_one(DataTable).move_cursor(row=next(i for i, r in enumerate(rows) if r.startswith("candidate:")))
        await pilot.pause()
        shown = screen._current().query
        assert "1 confirms the bin, 2 keeps it" in str(screen.query_one("#history").render())
        await pilot.press("l")  # no case to relabel: refused, nothing opens
        await settle(pilot)
        assert app.screen is screen and "binned candidate" in str(screen.query_one("#browser-message").render())
        await pilot.press(key)
        await settle(pilot)
        await type_text(pilot, reason)
        await pilot.press("enter")
        await settle(pilot)
        message = str(screen.query_one("#browser-message").render())
        assert not any(c.query_id.startswith("candidate:") and c.query == shown for c in screen.shown)  # settled
    return message, shown


async def test_2_keeps_a_binned_candidate_as_a_case_from_the_second_judgment(rws):
    ana_bins_one_bo_keeps_it(rws)
    cases_before, _ = set_files(rws)
    message, shown = await _settle_binned(rws, "2", "it is a real question")
    assert "kept as" in message and "adjudicated" in message
    cases, changes = set_files(rws)
    assert len(cases) == len(cases_before) + 1
    new = cases[-1]
    assert new["query"] == shown and new["rev"] == 1 and new["reviewer"] == "cy" and new["slice"] == "paraphrase"
    judged = next(j for j in judgments_file(rws) if j["query"] == shown)
    assert new["relevant"] == judged["relevant"] and new["source"]["candidate_id"] == int(judged["target"][10:])
    assert changes[-1]["action"] == "add" and changes[-1]["query_id"] == new["query_id"]
    assert changes[-1]["reason"].startswith("adjudicated: ana vs bo (decision): took bo's side (second review)")
    assert changes[-1]["reason"].endswith("it is a real question")
    assert rws.candidate(new["source"]["candidate_id"]).state == "kept"
    settled = [d for d in agreement(rws).disagreements if d.target == judged["target"]]
    assert [d.resolved for d in settled] == [changes[-1]["reason"]]


async def test_1_confirms_the_bin_of_a_candidate_the_second_reviewer_would_keep(rws):
    ana_bins_one_bo_keeps_it(rws)
    cases_before = (rws.root / "datasets/main/cases.jsonl").read_bytes()
    message, shown = await _settle_binned(rws, "1", "a duplicate of the backlog page")
    assert "bin confirmed" in message
    assert (rws.root / "datasets/main/cases.jsonl").read_bytes() == cases_before  # no case made or changed
    target = next(j["target"] for j in judgments_file(rws) if j["query"] == shown)
    assert rws.candidate(int(target[10:])).state == "binned"
    settled = [d for d in agreement(rws).disagreements if d.target == target]
    assert len(settled) == 1 and settled[0].resolved is not None
    assert settled[0].resolved.startswith("adjudicated: ana vs bo") and "took ana's side" in settled[0].resolved
    assert settled[0].resolved.endswith("a duplicate of the backlog page")
    out = subprocess.run([str(Path(sys.executable).parent / "curator"), "agreement", "--json"], cwd=rws.root,
                         capture_output=True, text=True, check=True)
    listed = {d["target"]: d["resolved"] for d in json.loads(out.stdout)["disagreements"]}
    assert listed[target] == settled[0].resolved


def test_a_binned_candidate_is_kept_once_only(rws):
    from curator.adjudicate import take_side
    from curator.errors import CuratorError

    ana_bins_one_bo_keeps_it(rws)
    d = next(d for d in agreement(rws).disagreements if d.query_id is None)
    session = ReviewSession(rws, reviewer="cy")
    case = take_side(session, d, "second", "worth a case")
    assert case is not None and case.source.candidate_id == int(d.target[10:])
    with pytest.raises(CuratorError, match="was kept since"):
        take_side(session, d, "second", "again")  # a stale list (another terminal): refused, no twin
    assert [c["query"] for c in set_files(rws)[0]].count(d.query) == 1


def test_the_second_pass_header_counts_every_item_once(rws):
    """reviewed N/M: M stays the number of items through keeps, skips and undos (the card
    on screen counted once), as the first review's counter does."""
    first_review(rws)
    session = SecondPassSession(rws, reviewer="bo")
    session.start()
    total = session.stats.remaining
    assert total >= 2
    totals = []
    card = session.next_card()
    totals.append(session.stats.queue)
    session.skip(card)
    card = session.next_card()
    totals.append(session.stats.queue)
    session.bin(card)
    card = session.next_card()
    totals.append(session.stats.queue)
    back = session.undo()
    session.requeue(card)
    assert back is not None
    totals.append(session.stats.queue)
    session.close()
    assert totals == [total] * 4, totals
