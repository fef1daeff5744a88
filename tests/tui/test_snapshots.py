"""How the app looks: main card (80x24 and 120x40), help, and the set browser.

Everything shown is fixed (passage revisions and dates, a case written with a fixed
time, reviewer from CURATOR_REVIEWER, 0 reviewed so no pace) and the cursor does not
blink. Update after a deliberate change with `pytest tests/tui --snapshot-update`.
"""

from __future__ import annotations

import json

from curator.tui.app import ReviewApp
from tests.tui.conftest import settle

E1042 = "errors/carrier-e1042.md#carrier-e1042-label-rejected"


async def ready(pilot) -> None:
    await settle(pilot)


def test_main_card_80x24(rws, snap_compare):
    assert snap_compare(ReviewApp(rws, blink=False), terminal_size=(80, 24), run_before=ready)


def test_main_card_labelled_120x40(rws, snap_compare):
    async def label(pilot) -> None:
        await settle(pilot)
        await pilot.press("p", "down", "o")
        await pilot.pause()

    assert snap_compare(ReviewApp(rws, blink=False), terminal_size=(120, 40), run_before=label)


def test_help_screen(rws, snap_compare):
    async def help_open(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(ReviewApp(rws, blink=False), terminal_size=(100, 30), run_before=help_open)


def test_set_browser(rws, snap_compare):
    root = rws.root / "datasets" / "main"
    root.mkdir(parents=True, exist_ok=True)
    at = "2026-11-29T10:00:00Z"
    case = {"query_id": "what-does-carrier-e1042-mean", "rev": 1, "query": "what does CARRIER-E1042 mean",
            "slice": "exact_identifier", "status": "active",
            "relevant": [{"id": E1042, "role": "primary", "grade": 2}], "source": {"kind": "log"},
            "tags": ["regression"], "reviewer": "ana", "at": at}
    change = {"at": at, "query_id": case["query_id"], "rev": 1, "action": "add", "reason": "",
              "reviewer": "ana", "versions": {}}
    (root / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (root / "changelog.jsonl").write_text(json.dumps(change) + "\n", encoding="utf-8")

    async def browse(pilot) -> None:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)

    assert snap_compare(ReviewApp(rws, blink=False), terminal_size=(120, 30), run_before=browse)
