"""Issue 19 (one session per lease, one case per candidate, a failed write keeps the card)
and issue 20 (slice rules at keep time, slice defaults, edits that keep their history, a
question typed in place), driven by Pilot on a real workspace; verify by the console script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from curator.models import CandidateIn
from curator.review import ReviewSession
from curator.tui.app import ReviewApp
from curator.workspace import Workspace
from tests.tui.conftest import set_files, settle, type_text

pytestmark = pytest.mark.anyio
SIZE = (120, 40)
CURATOR = str(Path(sys.executable).parent / "curator")
DHL = "carriers/dhl.md#cutoff-times"
FAQ = "faq.md#pickups"


def question(app) -> str:
    return str(app.screen.query_one("#question").render())


def message(app) -> str:
    return str(app.screen.query_one("#message").render())


def more_candidates(ws, n: int = 6) -> None:
    ws.add_candidates([CandidateIn(query=f"pickup after the dhl cutoff, case {i}", source_kind="manual") for i in range(n)])


async def kept(pilot, app, before: int) -> str:
    """Settle until the keep just pressed shows its "kept as" note (a slow machine may need
    more than one round); the note, to explain a failure."""
    for _ in range(50):
        await settle(pilot)
        if "kept as" in message(app) and app.session.stats.kept > before:
            break
        await pilot.pause(0.05)
    return message(app)


async def test_two_sessions_of_one_reviewer_never_share_a_card(rws):
    more_candidates(rws)
    # Two terminals are two processes with their own connection to the workspace.
    other_ws = Workspace.open(rws.root)
    first, second = ReviewApp(rws, blink=False, reviewer="ana"), ReviewApp(other_ws, blink=False, reviewer="ana")
    try:
        async with first.run_test(size=SIZE) as one, second.run_test(size=SIZE) as two:
            await settle(one)
            await settle(two)
            shown = {question(first), question(second)}
            assert len(shown) == 2, shown  # same name, two terminals: two different cards
            for pilot, app in ((one, first), (two, second)):
                for _ in range(4):  # each keeps what it is served
                    before = app.session.stats.kept
                    await pilot.press("1", "p", "k")
                    note = await kept(pilot, app, before)
                    assert app.session.stats.kept == before + 1, note
            assert first.session.lease_owner != second.session.lease_owner
    finally:
        other_ws.close()
    cases, _ = set_files(rws)
    from_candidates = [c["source"]["candidate_id"] for c in cases]
    assert len(cases) == 8 and len(set(from_candidates)) == 8  # no candidate kept twice
    assert {c["reviewer"] for c in cases} == {"ana"}  # the name in the files is unchanged


async def test_keep_of_a_candidate_with_an_active_case_is_refused(rws):
    app = ReviewApp(rws, blink=False, reviewer="ana")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "CARRIER-E1042" in question(app)
        other = ReviewSession(rws, reviewer="bo")  # another terminal got it (a lease ran out)
        other.start()
        card = other.new_card(rws.candidate(1))
        card.set_label(card.rows[0].id, "primary")
        other.keep(card)
        other.close()
        await pilot.press("p", "k")
        await settle(pilot)
        assert "already has an active case" in message(app)
        assert "CARRIER-E1042" in question(app)  # still on the card
    assert len(set_files(rws)[0]) == 1


async def test_disk_full_keep_keeps_the_card_and_a_retry_writes_it(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "k")  # the set's files exist now
        await settle(pilot)
        assert "dhl cutoff" in question(app)
        changelog = rws.root / "datasets" / "main" / "changelog.jsonl"
        saved = changelog.read_bytes()
        changelog.unlink()
        changelog.symlink_to("/dev/full")  # every write to the change log: ENOSPC
        await pilot.press("1", "p", "k")
        await settle(pilot)
        assert app.is_running
        assert "not kept" in message(app) and "could not write" in message(app)
        assert "press k to retry" in message(app)
        assert "dhl cutoff" in question(app)  # the same card, with its labels
        assert "primary" in app.screen.current.labels.values()
        changelog.unlink()
        changelog.write_bytes(saved)  # space again
        await pilot.press("k")  # retry
        await settle(pilot)
        assert "kept as" in message(app)
        assert "dhl cutoff" not in question(app)
    cases, changes = set_files(rws)
    assert [c["source"]["candidate_id"] for c in cases] == [1, 2]  # written once, not twice
    assert [(e["query_id"], e["rev"]) for e in changes] == [(c["query_id"], c["rev"]) for c in cases]
    assert rws.candidate(2).state == "kept"
    done = subprocess.run([CURATOR, "verify"], cwd=rws.root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


async def test_failed_bin_keeps_the_card(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rws.db.execute("PRAGMA query_only = ON")  # the workspace database refuses writes
        await pilot.press("x")
        await settle(pilot)
        assert app.is_running and "not binned" in message(app) and "press x to retry" in message(app)
        assert "CARRIER-E1042" in question(app)
        rws.db.execute("PRAGMA query_only = OFF")
        await pilot.press("x")
        await settle(pilot)
        assert "binned" in message(app) and "CARRIER-E1042" not in question(app)
    assert rws.candidate(1).state == "binned"


async def refused(pilot, app, *keys: str) -> str:
    await pilot.press(*keys, "k")
    await settle(pilot)
    return message(app)


async def test_every_slice_rule_is_checked_at_keep(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        card = app.screen.current
        # multi_hop (3): choosing it requires all; one primary is not enough
        said = await refused(pilot, app, "3", "p")
        assert card.require_all and "at least two primary passages" in said and "not kept" in said
        await pilot.press("down", "p", "r")  # two primaries, but require_all off
        said = await refused(pilot, app)
        assert "needs require_all" in said and "r requires them all" in said
        # freshness (5): choosing it pins; unpinned (f) and no max age is refused
        said = await refused(pilot, app, "5", "f")
        assert "revision pin or max_age_days" in said
        # negative (4) with a primary: labelling unmarks expect_empty, refused twice over
        said = await refused(pilot, app, "4", "p")
        assert "needs expect_empty" in said and "must not have primary passages" in said
        # a non-negative slice without a primary
        said = await refused(pilot, app, "c", "up", "c", "1")
        assert "mark a primary passage" in said
        assert set_files(rws)[0] == []  # nothing was kept
        await pilot.press("p", "3", "down", "p", "k")  # multi_hop done right
        await settle(pilot)
    (case,) = set_files(rws)[0]
    assert case["slice"] == "multi_hop" and case["require_all"] is True
    assert [r["role"] for r in case["relevant"]] == ["primary", "primary"]


async def test_n_selects_the_negative_slice_and_preselection_applies_defaults(rws):
    rws.add_candidates([CandidateIn(query="which carriers and cutoffs apply to a pickup", source_kind="generated",
                                    suggested_slice="multi_hop", count=99)])
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        card = app.screen.current
        assert card.slice == "multi_hop" and card.require_all  # pre-selected: its defaults
        await pilot.press("x")
        await settle(pilot)
        assert app.screen.current.slice == "exact_identifier"
        await pilot.press("p", "n", "k")  # n on an exact_identifier card: the negative slice
        await settle(pilot)
    cases = set_files(rws)[0]
    assert cases[0]["slice"] == "negative" and cases[0]["expect_empty"] is True and cases[0]["relevant"] == []


async def test_edit_keeps_the_original_and_a_typed_question_is_added(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e", "ctrl+u")
        await type_text(pilot, "what does the error CARRIER-E1042 mean")
        await pilot.press("enter", "p", "k")
        await settle(pilot)
        await pilot.press("i")
        await type_text(pilot, "how do I ship to the moon")
        await pilot.press("enter")
        await settle(pilot)
        assert "ship to the moon" in question(app)
        await pilot.press("n", "k")
        await settle(pilot)
        assert "dhl cutoff" in question(app)  # the card the new question replaced, back
    edited, typed = set_files(rws)[0]
    assert edited["query"] == "what does the error CARRIER-E1042 mean"
    assert edited["source"]["kind"] == "edited" and edited["source"]["candidate_id"] == 1
    assert edited["source"]["original"] == {
        "query": "what does CARRIER-E1042 mean", "kind": "log", "count": 37,
        "first_seen": "2026-11-02T02:14:00Z", "last_seen": "2026-11-28T09:00:00Z"}
    assert typed["query"] == "how do I ship to the moon" and typed["slice"] == "negative"
    assert typed["source"]["kind"] == "manual" and typed["expect_empty"] is True


def test_browser_edit_records_the_original(rws):
    session = ReviewSession(rws)
    session.start()
    card = session.new_card(rws.candidate(1))
    card.set_label(card.rows[0].id, "primary")
    kept = session.keep(card)
    once = session.revise(kept.query_id, {"query": "what is CARRIER-E1042"}, action="edit", reason="typo")
    twice = session.revise(kept.query_id, {"query": "what is E1042"}, action="edit", reason="shorter")
    session.close()
    assert once.source.kind == "edited"
    assert once.source.model_dump()["original"]["query"] == "what does CARRIER-E1042 mean"
    assert twice.source.model_dump()["original"]["query"] == "what does CARRIER-E1042 mean"  # the first
    assert twice.source.candidate_id == 1


async def test_failed_undo_is_retried_without_a_second_retire(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p", "k")
        await settle(pilot)
        rws.db.execute("PRAGMA query_only = ON")  # the retire reaches the file, the decision not
        await pilot.press("u")
        await settle(pilot)
        assert app.is_running and "not undone" in message(app) and "press u to retry" in message(app)
        rws.db.execute("PRAGMA query_only = OFF")
        await pilot.press("u")
        await settle(pilot)
        assert "undone" in message(app) and "CARRIER-E1042" in question(app)
    cases, changes = set_files(rws)
    assert [(c["rev"], c["status"]) for c in cases] == [(1, "active"), (2, "retired")]
    assert [e["action"] for e in changes] == ["add", "retire"]
    assert rws.candidate(1).state == "pending"


def test_verify_reports_two_active_cases_from_one_candidate(rws):
    """Keeping one candidate twice is refused by the app; a set that has it anyway (the API
    used directly, or two clones' keeps merged) is reported by verify with file:line."""
    qs = rws.question_set("main")
    for text in ("what does CARRIER-E1042 mean", "what does CARRIER-E1042 mean exactly"):
        qs.add({"query": text, "slice": "exact_identifier", "relevant": [{"id": "errors/carrier-e1042.md#carrier-e1042-"
                                                                          "label-rejected", "role": "primary"}],
                "source": {"kind": "log", "candidate_id": 1}}, reviewer="ana")
    done = subprocess.run([CURATOR, "verify"], cwd=rws.root, capture_output=True, text=True, timeout=60)
    out = done.stdout + done.stderr
    assert "cases.jsonl:2" in out and "came from the same candidate 1" in out, out
    assert "what-does-carrier-e1042-mean-exactly and what-does-carrier-e1042-mean" in out
    assert "retire one in the set browser" in out


def test_no_app_worker_uses_textual_s_exit_on_error():
    """Textual's default for a worker is to end the app on an exception (with a traceback
    on the terminal); every worker of curator's apps says `exit_on_error=False` and reports
    its failure on the card instead."""
    import ast

    import curator.tui

    found = []
    for path in sorted(Path(curator.tui.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                    "work", "run_worker"):
                flags = {k.arg: k.value for k in node.keywords}
                off = isinstance(flags.get("exit_on_error"), ast.Constant) and flags["exit_on_error"].value is False
                found.append((f"{path.name}:{node.lineno}", off))
    assert len(found) > 10  # the review, browser, relabel, serve and triage screens' workers
    assert [where for where, off in found if not off] == []
