"""The triage app driven by Pilot on the built demo (its stored dense-v2 run fails cases of
every kind): each cause path, skip, undo, the keymap, a snapshot of the card, the real
console script in a pseudo-terminal, and a relabel's effect on the rescored metrics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from curator import score
from curator.scoring.artefact import read_artefact
from curator.triage import decisions, load_artefact, rescore
from curator.tui.screens.triage import TriageApp
from curator.verify import verify
from curator.workspace import Workspace
from tests.terminal import spawn
from tests.tui.conftest import build_workspace, set_files, settle, type_text

SIZE = (120, 40)
E1042_TABLE = "errors/carrier-errors.md#carrier-error-codes"
E1042_OLD = "errors/carrier-errors.md#1xxx-request-and-account-errors"
RETRIES = "runbooks/parser.md#retries"
OLD_RETRIES_REV = "a41f7c9e2b3d58f06e1c4a7b9d2e5f8031c6a4b7"
CURATOR = str(Path(sys.executable).parent / "curator")


def facts(app) -> str:
    return str(app.screen.query_one("#triage-facts").render())


def message(app) -> str:
    return str(app.screen.query_one("#message").render())


async def goto(pilot, query_id: str) -> None:
    """Skip cards until the one for query_id shows."""
    await settle(pilot)
    for _ in range(10):
        if facts(pilot.app).startswith(query_id):
            return
        await pilot.press("s")
        await settle(pilot)
    raise AssertionError(f"{query_id} never came up")


def case_revs(ws, query_id: str) -> list[dict]:
    cases, _ = set_files(ws)
    return [c for c in cases if c["query_id"] == query_id]


@pytest.mark.anyio
async def test_bad_label_relabels_in_place_with_a_note(demo_ws):
    app = TriageApp(demo_ws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "carrier-e1042-meaning")
        await pilot.press("1")  # nothing changed yet: refused
        await settle(pilot)
        assert "change the labels first" in message(app)
        await pilot.press("p")  # rank 1, the error-code table
        await pilot.press("end", "c")  # the wrong label, ranked 7, below the stored top
        assert "→ cleared" in facts(app) and "new primary" in facts(app)
        await pilot.press("w")
        await type_text(pilot, "the code table answers it")
        await pilot.press("enter")
        await pilot.press("1")
        await settle(pilot)
        assert "rev 2 appended" in message(app)
        assert facts(app).startswith("parser-max-retries")  # the next card
    revs = case_revs(demo_ws, "carrier-e1042-meaning")
    assert revs[-1]["rev"] == 2 and revs[-1]["relevant"] == [{"id": E1042_TABLE, "role": "primary", "grade": 2}]
    _, changes = set_files(demo_ws)
    run = Path(app.session.artefact["_path"]).name
    assert changes[-1]["action"] == "relabel"
    assert changes[-1]["reason"] == f"triage bad_label ({run}): the code table answers it"
    assert [(d.query_id, d.cause, d.action, d.rev, d.reviewer) for d in decisions(demo_ws)] == [
        ("carrier-e1042-meaning", "bad_label", "relabel", 2, "tester")]
    assert verify(demo_ws.question_set()).ok


@pytest.mark.anyio
async def test_stale_metadata_never_repins_to_the_stale_hits_revision(demo_ws):
    app = TriageApp(demo_ws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "default-value-of-parser-max-retries")
        await pilot.press("down", "4")  # an unlabelled row: the corpus's current revision, already pinned
        await settle(pilot)
        assert "already pinned to 0f0bca32c24e" in message(app)
        await pilot.press("up", "4")  # the stale hit: still the corpus's current revision, not the old one
        await settle(pilot)
        assert "already pinned to 0f0bca32c24e" in message(app)
    revs = case_revs(demo_ws, "default-value-of-parser-max-retries")
    assert len(revs) == 1 and revs[0]["freshness"] == {"revision": "0f0bca32c24e"}
    assert not decisions(demo_ws)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("key", "cause", "query_id", "appends"),
    [
        ("2", "missing_chunk", "carrierapierrorratehigh-fires-for-dhl-ten", False),  # already tagged
        ("3", "synonym_gap", "until-what-time-can-dhl-parcels", True),
        ("5", "ranking_tie", "parser-max-retries", False),
        ("6", "retrieval_miss", "how-do-i-expense-a-taxi", True),
    ],
)
async def test_retrieval_causes_tag_regression(demo_ws, key, cause, query_id, appends):
    before = case_revs(demo_ws, query_id)
    app = TriageApp(demo_ws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, query_id)
        await pilot.press(key)
        await settle(pilot)
    after = case_revs(demo_ws, query_id)
    assert "regression" in after[-1]["tags"]
    stored = decisions(demo_ws)
    assert [(d.query_id, d.cause, d.action) for d in stored] == [(query_id, cause, "regression")]
    if appends:
        assert len(after) == len(before) + 1 and "regression" not in before[-1]["tags"]
        _, changes = set_files(demo_ws)
        assert changes[-1]["action"] == "edit" and changes[-1]["reason"].startswith(f"triage {cause} (")
        assert stored[0].rev == after[-1]["rev"]
    else:
        assert after == before and stored[0].rev is None


@pytest.mark.anyio
async def test_skip_and_undo(demo_ws):
    app = TriageApp(demo_ws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "until-what-time-can-dhl-parcels")
        await pilot.press("3")
        await settle(pilot)
        assert not facts(app).startswith("until-what-time")
        await pilot.press("u")
        await settle(pilot)
        assert facts(app).startswith("until-what-time-can-dhl-parcels")  # back on screen
        assert "undone" in message(app)
    revs = case_revs(demo_ws, "until-what-time-can-dhl-parcels")
    assert [(c["rev"], c["tags"]) for c in revs] == [(1, []), (2, ["regression"]), (3, [])]
    _, changes = set_files(demo_ws)
    assert changes[-1]["reason"].startswith("undo triage synonym_gap")
    rows = decisions(demo_ws)
    assert [(r.action, r.undone_by) for r in rows] == [("regression", rows[1].id), ("undo", None)]


@pytest.mark.anyio
async def test_keys_remap_through_the_keymap_and_help_lists_them(demo_ws):
    toml = demo_ws.root / "curator.toml"
    toml.write_text(toml.read_text() + '\n[keymap]\ncause-synonym-gap = "g"\n')
    ws = Workspace.open(demo_ws.root)
    app = TriageApp(ws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "until-what-time-can-dhl-parcels")
        assert "g synonym gap" in str(app.screen.query_one("#triage-causes").render())
        await pilot.press("question_mark")
        await pilot.pause()
        text = "\n".join(str(s.render()) for s in app.screen.query(".help-section"))
        assert "cause-synonym-gap" in text and "cause-bad-label" in text and "triage-note" in text
        await pilot.press("escape")
        await pilot.press("g")
        await settle(pilot)
    assert [(d.query_id, d.cause) for d in decisions(ws)] == [("until-what-time-can-dhl-parcels", "synonym_gap")]
    ws.close()


@pytest.mark.anyio
async def test_relabel_in_triage_changes_the_rescored_metrics(demo_ws):
    art = load_artefact(demo_ws)
    app = TriageApp(demo_ws, art, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, "carrier-e1042-meaning")
        await pilot.press("down", "o", "1")  # rank 2 becomes a secondary label
        await settle(pilot)
    result = rescore(demo_ws, art)
    q = result.artefact["questions"]["carrier-e1042-meaning"]
    # the new secondary at rank 2 is relevant (rel_level 1): the case no longer fails
    assert q["failure"] is None and q["first_relevant_rank"] == 2 and q["metrics"]["mrr@5"] == 0.5
    before = art["metrics"]["slices"]["exact_identifier"]
    after = result.artefact["metrics"]["slices"]["exact_identifier"]
    assert (before["success@5"], after["success@5"]) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert after["mrr@5"] == pytest.approx(before["mrr@5"] + 0.5 / 3)
    assert result.artefact["source_run"]["artefact"] == Path(art["_path"]).name


# ---- the card's appearance --------------------------------------------------------------

AT = "2026-11-29T10:00:00Z"
E1042 = "errors/carrier-e1042.md#carrier-e1042-label-rejected"
CASES = [
    {"query_id": "what-does-carrier-e1042-mean", "query": "what does CARRIER-E1042 mean", "slice": "exact_identifier",
     "relevant": [{"id": "runbooks/parser.md#retries", "role": "primary"}]},
    {"query_id": "dhl-cutoff", "query": "when is the dhl cutoff", "slice": "paraphrase",
     "relevant": [{"id": "carriers/dhl.md#cutoff-times", "role": "primary"}]},
]


def _fixed_workspace(root: Path) -> Workspace:
    """Fixed passages, cases and two stored runs with fixed names and times."""
    ws = build_workspace(root)
    folder = root / "datasets" / "main"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w") as cases, (folder / "changelog.jsonl").open("w") as log:
        for c in CASES:
            cases.write(json.dumps({**c, "rev": 1, "status": "active", "source": {"kind": "log"}, "tags": [],
                                    "reviewer": "ana", "at": AT}) + "\n")
            log.write(json.dumps({"at": AT, "query_id": c["query_id"], "rev": 1, "action": "add", "reason": "",
                                  "reviewer": "ana", "versions": {}}) + "\n")
    runs = {
        "20261128T090000Z-nogit-bm25": {"what-does-carrier-e1042-mean": [E1042, "runbooks/parser.md#retries"],
                                        "dhl-cutoff": ["carriers/dhl.md#cutoff-times"]},
        "20261129T090000Z-nogit-dense": {
            "what-does-carrier-e1042-mean": [E1042, "faq.md#pickups", "runbooks/label-backlog.md#drain-the-backlog",
                                             "carriers/dhl.md#cutoff-times", "faq.md#pickups-2", "x#6",
                                             "runbooks/parser.md#retries"],
            "dhl-cutoff": ["carriers/dhl.md#cutoff-times"]},
    }
    for name, ranked in runs.items():
        rows = {q: [{"id": d, "score": round(10 - i * 0.75, 2), "revision": "rev1aaaa"} for i, d in enumerate(ids)]
                for q, ids in ranked.items()}
        art = score(ws.question_set(), rows, k=5, workspace=ws, label=name.rsplit("-", 1)[1], gates=[]).artefact
        art["created_at"] = f"{name[:4]}-{name[4:6]}-{name[6:8]}T{name[9:11]}:00:00Z"
        ws.runs_dir.mkdir(exist_ok=True)
        (ws.runs_dir / f"{name}.json").write_text(json.dumps(art))
    return ws


def test_triage_card_snapshot(tmp_path, snap_compare):
    ws = _fixed_workspace(tmp_path / "ws")

    async def ready(pilot) -> None:
        await settle(pilot)
        await pilot.press("p")  # stage a new label: the card shows it
        await settle(pilot)

    assert snap_compare(TriageApp(ws, blink=False), terminal_size=(120, 36), run_before=ready)
    assert read_artefact(ws.runs_dir / "20261129T090000Z-nogit-dense.json")["label"] == "dense"


# ---- the real console script ------------------------------------------------------------


@pytest.mark.slow
def test_triage_in_a_real_terminal(demo_ws):
    root = demo_ws.root
    env = {**os.environ, "TERM": "xterm-256color", "CURATOR_REVIEWER": "pty-user", "COLUMNS": "", "LINES": ""}
    env = {k: v for k, v in env.items() if v}
    child = spawn(CURATOR, ["triage", "dense-v2"], cwd=str(root), env=env, dimensions=(30, 120),
                          encoding="utf-8", codec_errors="replace", timeout=20)
    try:
        child.expect("parser.max_retries after release")
        child.send("4")  # the stale hit is highlighted: the pin stays the corpus's current revision
        child.expect("already pinned to 0f0bca32c24e")
        child.send("6")  # a real retrieval miss: the old revision outranks the current one
        child.expect("What is the current DHL weekday cutoff")
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    ws = Workspace.open(root)
    latest = case_revs(ws, "default-value-of-parser-max-retries")[-1]
    assert latest["relevant"][0]["revision"] == "0f0bca32c24e" and latest["reviewer"] == "pty-user"
    assert "regression" in latest["tags"]
    assert [(d.cause, d.reviewer) for d in decisions(ws)] == [("retrieval_miss", "pty-user")]
    summary = subprocess.run([CURATOR, "triage", "--summary", "--json"], cwd=root,
                                           capture_output=True, text=True, env=env, timeout=60)
    assert summary.returncode == 0 and json.loads(summary.stdout)["triaged"] == 1
    ws.close()


@pytest.mark.anyio
async def test_a_failed_write_keeps_the_triage_app_up_and_a_retry_writes_it(demo_ws):
    """Disk full on the change log (issue 19: the app never dies on an I/O error): the
    card stays with a message, the set is untouched, and the same key retries."""
    query_id = "until-what-time-can-dhl-parcels"
    before = case_revs(demo_ws, query_id)
    changelog = demo_ws.root / "datasets" / "main" / "changelog.jsonl"
    saved = changelog.read_bytes()
    app = TriageApp(demo_ws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await goto(pilot, query_id)
        changelog.unlink()
        changelog.symlink_to("/dev/full")  # every write to the change log: ENOSPC
        await pilot.press("3")
        await settle(pilot)
        assert app.is_running and "not saved: No space left on device" in message(app), message(app)
        assert facts(app).startswith(query_id)  # the same card
        changelog.unlink()
        changelog.write_bytes(saved)
        await pilot.press("3")  # retry
        await settle(pilot)
        assert not facts(app).startswith(query_id)
    assert len(case_revs(demo_ws, query_id)) == len(before) + 1
    assert verify(demo_ws.question_set("main")).ok
