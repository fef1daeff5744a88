"""`curator generate` through click and, end to end, the real console script in a pty."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from tests.terminal import spawn
from tests.unit import generate_corpus

pytest_plugins = ["tests.fake_openai"]  # the `fake_openai` fixture

KEY = "sk-test-CLI-SECRET-0a1b2c3d4e5f6789"


@pytest.fixture
def gws(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    generate_corpus.load(ws, tmp_path)
    return ws


def cli(run_cli, ws, *args):
    return run_cli(["-w", str(ws.root), "generate", *args])


def test_generate_json_summary_and_rerun(gws, fake_openai, run_cli):
    result = cli(run_cli, gws, "-n", "5", "--base-url", fake_openai.url, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["candidates_added"] == len(gws.candidates(source_kind="generated")) > 0
    assert summary["calls"] == summary["tasks"]
    again = json.loads(cli(run_cli, gws, "-n", "5", "--base-url", fake_openai.url, "--json").output)
    assert again["calls"] == 0 and again["tasks_cached"] == summary["tasks"]
    assert KEY not in result.output


def test_partial_failure_exits_3_and_names_the_passage(gws, fake_openai, run_cli):
    fake_openai.fail("malformed", times=None, match="faq.md#")
    result = cli(run_cli, gws, "-n", "5", "--base-url", fake_openai.url)
    assert result.exit_code == 3
    assert "faq.md#frequently-asked-questions" in result.output
    assert "Queued" in result.output


def test_dry_run_prints_calls_tokens_and_cost(gws, fake_openai, run_cli):
    result = cli(run_cli, gws, "-n", "5", "--base-url", fake_openai.url, "--dry-run")
    assert result.exit_code == 0
    assert "Dry run for 5 passages" in result.output and "estimated cost $" in result.output
    assert fake_openai.chat_calls == 0


def test_max_cost_without_a_price_is_a_clear_error(gws, fake_openai, run_cli):
    result = cli(run_cli, gws, "--model", "my-llama", "--max-cost", "1", "--base-url", fake_openai.url)
    assert result.exit_code == 1
    assert "needs a price for model 'my-llama'" in result.output


def test_batch_submit_poll_ingest_and_resume(gws, fake_openai, run_cli):
    fake_openai.batch_polls = 2
    result = cli(run_cli, gws, "-n", "2", "--slice", "paraphrase", "--base-url", fake_openai.url,
                 "--batch", "--poll-interval", "0.01", "--json")
    assert result.exit_code == 0, result.output
    done = json.loads(result.output)
    assert done["batch_status"] == "completed" and done["candidates_added"] == 2
    uploads = [r for r in fake_openai.requests if r["path"].endswith("/files")]
    assert uploads and uploads[0]["body"]["purpose"][1] == b"batch"
    calls = gws.db.execute("SELECT count(*), min(kind) FROM model_calls WHERE batch_id = ?",
                           [done["batch_id"]]).fetchone()
    assert calls == (2, "batch")
    # submit without waiting, then collect by id
    submitted = cli(run_cli, gws, "-n", "5", "--base-url", fake_openai.url, "--batch", "--no-wait", "--json")
    assert submitted.exit_code == 3
    batch_id = json.loads(submitted.output)["batch_id"]
    before = len(gws.candidates(source_kind="generated"))
    resumed = cli(run_cli, gws, "--resume-batch", batch_id, "--base-url", fake_openai.url,
                  "--poll-interval", "0.01", "--json")
    assert resumed.exit_code == 0, resumed.output
    assert len(gws.candidates(source_kind="generated")) == before + json.loads(resumed.output)["candidates_added"] > before
    listed = json.loads(cli(run_cli, gws, "--list-batches", "--json").output)
    assert {b["id"] for b in listed} == {done["batch_id"], batch_id}
    assert all(b["ingested_at"] for b in listed)
    again = cli(run_cli, gws, "--resume-batch", batch_id, "--base-url", fake_openai.url, "--json")
    assert json.loads(again.output)["batch_status"] == "already ingested"


def test_unknown_batch_id_is_an_error(gws, fake_openai, run_cli):
    result = cli(run_cli, gws, "--resume-batch", "batch-nope", "--base-url", fake_openai.url)
    assert result.exit_code == 1 and "no batch 'batch-nope'" in result.output


@pytest.mark.slow
def test_console_script_in_a_pty(gws, fake_openai):
    pexpect = pytest.importorskip("pexpect")
    script = Path(sys.executable).parent / "curator"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CURATOR_", "OPENAI_"))}
    env.update(OPENAI_API_KEY=KEY, TERM="xterm-256color", COLUMNS="120")
    child = spawn(
        str(script), ["-w", str(gws.root), "generate", "-n", "4", "--base-url", fake_openai.url],
        env=env, encoding="utf-8", timeout=60, dimensions=(40, 120),
    )
    child.expect(pexpect.EOF)
    output = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", child.before)  # rich's colours
    child.close()
    match = re.search(r"Queued (\d+) candidates from 4 passages", output)
    assert match, output
    queued = int(match.group(1))
    assert child.exitstatus == 0
    assert "Review them: curator review --source generated" in output
    assert KEY not in output
    assert queued == len(gws.candidates(source_kind="generated")) > 0
