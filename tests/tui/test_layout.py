"""What the review card shows, found in a real review (issue 24): ids keep their
distinguishing tail, 80x24 keeps the footer's ? and q, the header counter holds through
undos, the relabel card's footer has only its keys, Home/End, modals show the card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curator.corpus.importer import add_paths
from curator.models import CandidateIn, Suggestion
from curator.tui.app import ReviewApp
from curator.workspace import Workspace
from tests.tui.conftest import settle, type_text

pytestmark = pytest.mark.anyio
LONG = "operations/runbooks/alerting/highly-available-workload-incorrectly-spread.md"


def screen_text(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def header(app) -> str:
    return screen_text(app)[0]


async def test_the_counter_holds_through_keeps_undos_and_skips(rws):
    rws.add_candidates([CandidateIn(query=f"extra question {n}", source_kind="manual") for n in range(4)])
    app = ReviewApp(rws, blink=False)  # 7 candidates
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "reviewed 0/7 " in header(app)
        seen = []
        for key in ["p", "k", "u", "p", "k", "x", "s", "u", "u", "u", "s"]:
            await pilot.press(key)
            await settle(pilot)
            seen.append(header(app).split("reviewed ")[1].split(" ")[0])
        # p labels (no change), k keeps, u undoes, ... every figure is out of 7
        assert seen == ["0/7", "1/7", "0/7", "0/7", "1/7", "2/7", "3/7", "2/7", "1/7", "0/7", "1/7"]


def _long_id_workspace(root: Path) -> Workspace:
    ws = Workspace.init(root)
    corpus = root / "passages.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for anchor, title in (("diagnosis", "Diagnosis"), ("diagnosis-part-2", "Diagnosis (part 2)")):
            fh.write(json.dumps({"id": f"{LONG}#{anchor}", "title": title, "revision": "rev1aaaa",
                                 "text": "Check the pod anti-affinity and the topology spread constraints.",
                                 "updated_at": "2026-11-01T00:00:00Z"}) + "\n")
    add_paths(ws, [corpus])
    ws.add_candidates([CandidateIn(
        query="What triggers HighlyAvailableWorkloadIncorrectlySpread?", source_kind="log", count=3,
        suggestions=[Suggestion(id=f"{LONG}#diagnosis", reason="clicked"),
                     Suggestion(id=f"{LONG}#diagnosis-part-2", reason="clicked")])])
    return ws


async def test_long_ids_keep_their_tail_and_the_reason_at_120_columns(tmp_path):
    ws = _long_id_workspace(tmp_path / "ws")
    app = ReviewApp(ws, blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = "\n".join(screen_text(app))
        assert "…#diagnosis " in text and "…#diagnosis-part-2 " in text
        rows = str(app.screen.query_one("#passages").render()).splitlines()
        assert rows[1].strip().startswith("clicked") and rows[5].strip().startswith("clicked")
        head = str(app.screen.query_one("#preview-head").render()).splitlines()[0]
        assert head.endswith("#diagnosis") and "…" in head  # the preview header too
        await pilot.press("end")
        await pilot.pause()
        assert app.screen.query_one("#passages").highlighted == 1
        head = str(app.screen.query_one("#preview-head").render()).splitlines()[0]
        assert head.endswith("#diagnosis-part-2")
        await pilot.press("home")
        await pilot.pause()
        assert app.screen.query_one("#passages").highlighted == 0
    ws.close()


async def test_80x24_keeps_help_and_quit_in_the_footer(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lines = screen_text(app)
        assert "? help" in lines[-1] and "q quit" in lines[-1]
        assert not app.screen.query_one("#preview-box").display  # collapsed
        assert sum("@rev1aaaa" in line for line in lines) >= 2  # two passages in view


async def test_a_modal_shows_the_question_and_the_highlighted_passage(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p", "w")
        await pilot.pause()
        context = str(app.screen.query_one("#modal-context").render())
        assert "what does CARRIER-E1042 mean" in context
        assert "errors/carrier-e1042.md#carrier-e1042-label-rejected" in context and "primary" in context
        await type_text(pilot, "the error page")
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "ReviewScreen"


async def test_the_relabel_footer_has_only_its_keys(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("p", "k")
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        assert app.screen.__class__.__name__ == "ReviseScreen"
        footer = screen_text(app)[-1]
        assert "save" in footer and "primary" in footer
        for refused in ("bin", "skip", "undo", "browse"):
            assert refused not in footer, footer
        await pilot.press("x", "u")  # off here: nothing retired, nothing undone
        await settle(pilot)
        assert app.screen.__class__.__name__ == "ReviseScreen"
    cases = [json.loads(line) for line in (rws.root / "datasets" / "main" / "cases.jsonl").read_text().splitlines()]
    assert [(c["rev"], c["status"]) for c in cases] == [(1, "active")]
