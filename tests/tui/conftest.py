"""A small real workspace for the review app: a corpus of pre-chunked passages with fixed
revisions and times (so snapshots hold) and a few candidates of each kind."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from curator.corpus.importer import add_paths
from curator.models import CandidateIn, Suggestion
from curator.workspace import Workspace

PASSAGES = [
    ("carriers/dhl.md#cutoff-times", "DHL cutoff times",
     "DHL Express pickups close at 18:00 on weekdays. Parcels labelled after the cutoff leave the next day."),
    ("errors/carrier-e1042.md#carrier-e1042-label-rejected", "CARRIER-E1042: Label rejected",
     "CARRIER-E1042 means the carrier rejected the label because the postcode does not match the city. "
     "Fix the address and reprint the label."),
    ("runbooks/parser.md#retries", "Parser retries",
     "The manifest parser retries a failed file three times with parser.max_retries, then moves it to quarantine."),
    ("runbooks/label-backlog.md#drain-the-backlog", "Drain the label backlog",
     "When the label backlog grows past 5000, scale the label workers and pause low-priority batches."),
    ("faq.md#pickups", "Pickups",
     "Pickups are booked through the carrier portal; a pickup booked after the cutoff moves to the next day."),
]

CANDIDATES = [
    CandidateIn(query="what does CARRIER-E1042 mean", source_kind="log", count=37,
                suggested_slice="exact_identifier",
                suggestions=[Suggestion(id="errors/carrier-e1042.md#carrier-e1042-label-rejected", reason="clicked")],
                provenance={"count": 37, "variants": ["carrier-e1042", "E1042 label"],
                            "first_seen": "2026-11-02T02:14:00Z", "last_seen": "2026-11-28T09:00:00Z"}),
    CandidateIn(query="when is the dhl cutoff", source_kind="log", count=20,
                provenance={"count": 20, "first_seen": "2026-11-03T08:00:00Z", "last_seen": "2026-11-27T10:00:00Z"}),
    CandidateIn(query="how do I drain a label backlog", source_kind="generated", count=1,
                suggested_slice="paraphrase",
                suggestions=[Suggestion(id="runbooks/label-backlog.md#drain-the-backlog", reason="generated from")],
                provenance={"model": "test-model", "prompt": "paraphrase", "prompt_version": "1",
                            "passages": ["runbooks/label-backlog.md#drain-the-backlog"]},
                rationale="Restates the backlog runbook without its words."),
]


def build_workspace(root: Path) -> Workspace:
    ws = Workspace.init(root)
    corpus = root / "passages.jsonl"
    with corpus.open("w", encoding="utf-8") as fh:
        for pid, title, text in PASSAGES:
            fh.write(json.dumps({"id": pid, "title": title, "text": text, "revision": "rev1aaaa",
                                 "updated_at": "2026-11-01T00:00:00Z"}) + "\n")
    add_paths(ws, [corpus])
    ws.add_candidates(CANDIDATES)
    return ws


@pytest.fixture
def rws(tmp_path: Path):
    ws = build_workspace(tmp_path / "ws")
    yield ws
    ws.close()


async def settle(pilot) -> None:
    """Wait until the app's workers finished and their messages were handled. A worker of
    a screen that closed meanwhile is cancelled with it (the relabel screen's save worker
    closes its own screen): finished too, not an error."""
    from textual.worker import WorkerCancelled

    for _ in range(3):
        with contextlib.suppress(WorkerCancelled):
            await pilot.app.workers.wait_for_complete()
        await pilot.pause()


async def type_text(pilot, text: str) -> None:
    """Paste `text` into the focused field, as a terminal's bracketed paste delivers it
    (pressing each key takes Pilot ~70 ms)."""
    from textual import events

    pilot.app.focused.post_message(events.Paste(text))
    await pilot.pause()


def screen_rows(app, top: int, bottom: int) -> list[list[tuple[str, str]]]:
    """The screen's rows top..bottom as drawn: (text, style) per segment, without meta."""
    strips = app.screen._compositor.render_strips()[top:bottom]
    return [[(seg.text, str(seg.style)) for seg in strip.simplify().discard_meta()] for strip in strips]


def lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def set_files(ws: Workspace, name: str = "main") -> tuple[list[dict], list[dict]]:
    root = ws.root / "datasets" / name
    return lines(root / "cases.jsonl"), lines(root / "changelog.jsonl")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
