"""`generate --batch` results that fail validation: one live repair call each, counted in
the budget and the call log, then a recorded failure (against the fake server's files and
batches endpoints)."""

from __future__ import annotations

import pytest

from curator.generate import generate
from tests.unit import generate_corpus

pytest_plugins = ["tests.fake_openai"]  # the `fake_openai` fixture

KEY = "sk-test-BATCH-SECRET-5a6b7c8d9e0f"


@pytest.fixture
def gws(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    generate_corpus.load(ws, tmp_path)
    return ws


def run_batch(ws, server, **kw):
    return generate(ws, passages=20, base_url=server.url, batch=True, poll_interval=0.01,
                    timeout=5, **kw)


def calls(ws, run_id):
    return list(ws.db.query("SELECT * FROM model_calls WHERE run_id = ? ORDER BY rowid", [run_id]))


def live_chat(server):
    """Chat requests made over HTTP (the batch's own requests never are)."""
    return [r for r in server.requests if r["path"].endswith("/chat/completions")]


def test_an_invalid_batch_result_gets_one_live_repair(gws, fake_openai):
    fake_openai.fail("invalid", times=1, match="faq.md#")  # the batch's answer for one task
    summary = run_batch(gws, fake_openai)
    assert summary.batch_status == "completed"
    assert summary.complete and summary.tasks_failed == 0
    rows = calls(gws, summary.run_id)
    invalid = [r for r in rows if r["outcome"] == "invalid"]
    assert [r["kind"] for r in invalid] == ["batch"]
    repairs = [r for r in rows if r["kind"] == "repair"]
    assert [(r["outcome"], r["task_key"]) for r in repairs] == [("ok", invalid[0]["task_key"])]
    assert summary.calls == summary.tasks + 1  # the repair is counted like any call
    (repair,) = live_chat(fake_openai)
    messages = repair["body"]["messages"]
    assert len(messages) == 4 and messages[2]["role"] == "assistant"
    assert "did not match the required JSON schema" in messages[3]["content"]
    assert repair["auth"] == f"Bearer {KEY}"
    task = next(gws.db.query("SELECT * FROM generation_tasks WHERE task_key = ?",
                             [invalid[0]["task_key"]]))
    assert task["status"] == "ok" and task["candidates"] > 0


def test_a_failed_repair_is_recorded_and_a_live_run_retries_it(gws, fake_openai):
    fake_openai.fail("invalid", times=2, match="faq.md#")  # the batch answer and the repair
    summary = run_batch(gws, fake_openai)
    assert len(summary.failures) == 1
    assert "invalid JSON after one repair" in summary.failures[0].error
    rows = calls(gws, summary.run_id)
    assert [(r["kind"], r["outcome"]) for r in rows if r["outcome"] != "ok"] == [
        ("batch", "invalid"), ("repair", "invalid")]
    failed = list(gws.db.query("SELECT * FROM generation_tasks WHERE status = 'failed'"))
    assert len(failed) == 1 and "invalid JSON after one repair" in failed[0]["error"]
    # not cached: a normal run sends only that task again
    again = generate(gws, passages=20, base_url=fake_openai.url, timeout=5)
    assert again.calls == 1 and again.complete


def test_repairs_respect_the_run_budget(gws, fake_openai):
    fake_openai.fail("invalid", times=1, match="faq.md#")
    tasks = generate(gws, passages=20, base_url=fake_openai.url, dry_run=True).estimate["calls"]
    summary = run_batch(gws, fake_openai, max_calls=tasks)  # the batch spends all of it
    assert live_chat(fake_openai) == []
    assert summary.tasks_not_run == 1 and "--max-calls" in summary.stopped
    statuses = [r["status"] for r in gws.db.query("SELECT status FROM generation_tasks")]
    assert statuses.count("not_run") == 1 and statuses.count("failed") == 0
