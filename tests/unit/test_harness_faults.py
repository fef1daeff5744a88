"""`curator run` under faults: a command retriever that answers late never shifts answers
onto the next query, and Ctrl-C (SIGINT to the real console script) writes what was
answered and exits 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from curator.errors import EXIT_INTERRUPTED
from tests.unit import harness_helpers
from tests.unit.harness_helpers import answer_for, start_server

HELPER = Path(harness_helpers.__file__)
CURATOR = Path(sys.executable).parent / "curator"
ROOT = Path(__file__).resolve().parents[2]


def _set_with(ws, queries: list[str]) -> list[str]:
    qs = ws.question_set()
    for q in queries:
        qs.add({"query": q, "slice": "paraphrase", "relevant": [{"id": answer_for(q)[0]}]})
    by_query = {c.query: c.query_id for c in qs.read().cases.values()}
    return [by_query[q] for q in queries]


def _lines(path: Path) -> dict[str, dict]:
    return {r["query_id"]: r for r in map(json.loads, path.read_text().splitlines())}


# every query has a different word count, so each one's answer (doc-<words>) is its own
QUERIES = ["alpha beta", "slow query number one here", "gamma delta epsilon", "zeta eta theta iota"]


@pytest.mark.parametrize("echo", [False, True], ids=["restarted", "matched-by-id"])
def test_a_late_command_answer_is_never_read_as_the_next_querys(ws, run_cli, tmp_path, echo) -> None:
    ids = _set_with(ws, QUERIES)
    starts = tmp_path / "starts.log"
    command = f"{sys.executable} {HELPER} --starts {starts}" + (" --echo-id" if echo else "")
    result = run_cli(["run", "--kind", "command", "--command", command, "--timeout", "0.7", "--retries", "0",
                      "--no-score", "--json"], cwd=ws.root)
    assert result.exit_code == 3, result.output  # one request failed
    run = _lines(ws.root / "retriever-runs" / "command.jsonl")
    slow = run[ids[1]]
    assert slow["results"] == [] and "no answer within 0.7 s" in slow["error"]
    for query, query_id in zip(QUERIES, ids, strict=True):
        if query_id == ids[1]:
            continue
        assert [r["id"] for r in run[query_id]["results"]] == answer_for(query), query
    # without ids the program is restarted after the timeout; with ids it is kept
    assert starts.read_text().count("started") == (1 if echo else 2)


def test_ctrl_c_mid_run_writes_what_was_answered_and_exits_130(ws) -> None:
    server = start_server()
    server.delay = 0.15  # type: ignore[attr-defined]
    harness_helpers.SEEN.clear()
    try:
        _set_with(ws, [f"interrupt query {'x ' * i}".strip() for i in range(30)])
        port = server.server_address[1]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [str(CURATOR), "run", "--kind", "http", "--url", f"http://127.0.0.1:{port}/x/_search",
             "--body", '{"query": {"match": {"text": "{query}"}}, "size": {k}}', "--hits", "hits.hits",
             "--id", "_id", "--json"],
            cwd=ws.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(harness_helpers.SEEN) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(harness_helpers.SEEN) >= 5, "the run did not start"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "interrupted" in err
    summary = json.loads(out)
    assert summary["interrupted"] is True and 0 < summary["queries"] < 30
    run = _lines(ws.root / "retriever-runs" / "http.jsonl")
    assert len(run) == summary["queries"]  # every answered query written, nothing more
    assert all(r["results"] and "latency_ms" in r for r in run.values())
    assert not list((ws.root / "runs").glob("*.json"))  # nothing scored
