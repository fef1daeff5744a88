"""Stale hits fail, max_age_days at the run's time, failure/stale/latency gates per slice,
failed requests and the TREC sidecar, on the real demo workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import curator
from curator.config import Gate
from curator.scoring.gates import parse_gate_flag
from curator.scoring.runs import read_run

PARSER = "runbooks/parser.md#retries"
DHL = "carriers/dhl.md#cutoff-times"


def _perfect(ws, stale_first: bool = False, latency: float | None = 5.0) -> list[dict[str, Any]]:
    """A run line per active case: its primaries at their current revision (nothing for a
    negative); with `stale_first`, an old revision of the freshness passages first."""
    rows = []
    for case in ws.question_set().read().cases.values():
        if case.status != "active":
            continue
        results = []
        for r in case.relevant:
            current = [rev for rev, _, is_current in ws.revisions_of(r.id) if is_current]
            results.append({"id": r.id, "score": 1.0, "revision": current[0] if current else None})
        if stale_first and case.slice == "freshness":
            old = [rev for rev, _, is_current in ws.revisions_of(results[0]["id"]) if not is_current]
            results.insert(0, {"id": results[0]["id"], "score": 2.0, "revision": old[0]})
        row: dict[str, Any] = {"query_id": case.query_id, "results": results}
        if latency is not None:
            row["latency_ms"] = latency
        rows.append(row)
    return rows


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_stale_first_run_gates_red(demo_ws, tmp_path: Path) -> None:
    gates = [parse_gate_flag("success@5>=1:freshness"), parse_gate_flag("stale_rate<=0:freshness"),
             parse_gate_flag("failures<=0:freshness")]
    good = curator.score(demo_ws.question_set(), _write(tmp_path / "good.jsonl", _perfect(demo_ws)),
                         workspace=demo_ws, gates=gates)
    assert good.artefact["passed"], good.artefact["gates"]
    stale = curator.score(demo_ws.question_set(), _write(tmp_path / "stale.jsonl", _perfect(demo_ws, stale_first=True)),
                          workspace=demo_ws, gates=gates)
    block = stale.artefact["metrics"]["slices"]["freshness"]
    assert block["success@5"] == 0.0 and block["stale_rate"] == 1.0 and block["failures"] == 2
    assert [v["passed"] for v in stale.artefact["gates"]] == [False, False, False]
    q = stale.artefact["questions"]["default-value-of-parser-max-retries"]
    # recall and the first relevant rank count only the pinned revision (rank 2), success does not count it
    assert q["failure"] == "stale" and q["first_relevant_rank"] == 2 and q["metrics"]["recall@5"] == 1.0
    assert q["query"] == "default value of parser.max_retries after release 2026.11"
    # other slices are untouched
    assert stale.artefact["metrics"]["slices"]["paraphrase"]["success@5"] == 1.0


def test_stale_gate_on_the_cli_exits_1(demo_ws, run_cli, tmp_path: Path) -> None:
    run = _write(tmp_path / "stale.jsonl", _perfect(demo_ws, stale_first=True))
    result = run_cli(["score", str(run), "--gate", "stale_rate<=0:freshness", "--no-write"], cwd=demo_ws.root)
    assert result.exit_code == 1
    assert "stale_rate on freshness: 1.000 > 0" in result.output


def _aged_case(ws, max_age: int) -> dict[str, Any]:
    return {"query_id": "aged", "rev": 1, "query": "parser retries default", "slice": "freshness", "status": "active",
            "relevant": [{"id": PARSER, "role": "primary", "grade": 2}], "freshness": {"max_age_days": max_age}}


def test_max_age_days_is_applied_at_the_runs_time(demo_ws, tmp_path: Path) -> None:
    committed = [when for _, when, cur in demo_ws.revisions_of(PARSER) if cur][0]
    assert committed is not None
    year = int(committed[:4])
    for stamp, fails in ((committed, False), (f"{year + 3}{committed[4:]}", True)):
        run = _write(tmp_path / "aged.jsonl", [{"query_id": "aged", "results": [{"id": PARSER}], "timestamp": stamp}])
        result = curator.score([_aged_case(demo_ws, 30)], run, workspace=demo_ws, gates=[])
        q = result.artefact["questions"]["aged"]
        assert (q["failure"] == "too_old") is fails, q
        assert q["metrics"]["success@5"] == (0.0 if fails else 1.0)
        assert result.artefact["run_time"].startswith(stamp[:10])
    # a generous limit passes at the late time too
    result = curator.score([_aged_case(demo_ws, 3650)], run, workspace=demo_ws, gates=[])
    assert result.artefact["questions"]["aged"]["failure"] is None


def test_latency_gates_per_slice_and_incomplete_latency(demo_ws, tmp_path: Path) -> None:
    rows = _perfect(demo_ws, latency=None)
    for i, row in enumerate(rows):
        row["latency_ms"] = 10.0 + i
    full = _write(tmp_path / "full.jsonl", rows)
    gates = [parse_gate_flag("p95<=1000:exact_identifier"), parse_gate_flag("p50<=1:paraphrase"),
             parse_gate_flag("p99<=1000")]
    result = curator.score(demo_ws.question_set(), full, workspace=demo_ws, gates=gates)
    verdicts = result.artefact["gates"]
    assert [(v["slice"], v["metric"], v["passed"]) for v in verdicts] == [
        ("exact_identifier", "p95_latency_ms", True), ("paraphrase", "p50_latency_ms", False),
        ("overall", "p99_latency_ms", True)]
    ident = [r for r in rows if r["query_id"] in result.artefact["questions"]
             and result.artefact["questions"][r["query_id"]]["slice"] == "exact_identifier"]
    del ident[0]["latency_ms"]
    partial = _write(tmp_path / "partial.jsonl", rows)
    result = curator.score(demo_ws.question_set(), partial, workspace=demo_ws, gates=gates[:1])
    (verdict,) = result.artefact["gates"]
    assert not verdict["passed"]
    assert verdict["note"] == f"only {len(ident) - 1} of {len(ident)} scored queries carry latency_ms"


def test_bad_latency_is_rejected_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"query_id": "a", "results": ["x"], "latency_ms": 3}\n'
                    '{"query_id": "b", "results": ["x"], "latency_ms": -1}\n'
                    '{"query_id": "c", "results": ["x"], "latency_ms": "fast"}\n')
    run = read_run(path)
    assert [str(p) for p in run.problems] == [
        f"{path}:2: query b: latency_ms must not be negative, got -1; latency ignored",
        f"{path}:3: query c: latency_ms must be a number, got 'fast'; latency ignored"]
    assert [run.queries[q].latency_ms for q in "abc"] == [3.0, None, None]


def test_failed_request_is_not_an_empty_result(demo_ws, tmp_path: Path) -> None:
    rows = _perfect(demo_ws)
    negatives = [c.query_id for c in demo_ws.question_set().read().cases.values()
                 if c.status == "active" and (c.expect_empty or not c.relevant)]
    for row in rows:
        if row["query_id"] == negatives[0]:
            row["error"] = "HTTP 500"
    result = curator.score(demo_ws.question_set(), _write(tmp_path / "r.jsonl", rows), workspace=demo_ws,
                           gates=[Gate(metric="failures", max=0)])
    q = result.artefact["questions"][negatives[0]]
    assert q["failure"] == "failed" and q["negative_pass"] is False and q["error"] == "HTTP 500"
    assert result.artefact["failed"] == [negatives[0]]
    assert not result.artefact["passed"]


def test_trec_sidecar_carries_latency_and_empty_results(demo_ws, tmp_path: Path) -> None:
    rows = _perfect(demo_ws, latency=None)
    trec = tmp_path / "run.trec"
    lines, meta = [], []
    for row in rows:
        for rank, item in enumerate(row["results"], 1):
            lines.append(f"{row['query_id']} Q0 {item['id']} {rank} {10 - rank} t")
        meta.append({"query_id": row["query_id"], "latency_ms": 4.0, **({} if row["results"] else {"empty": True})})
    trec.write_text("\n".join(lines) + "\n")
    without = curator.score(demo_ws.question_set(), trec, workspace=demo_ws, gates=[])
    assert without.artefact["metrics"]["overall"]["negative_pass_rate"] == 0.0  # missing, not empty
    _write(tmp_path / "run.trec.meta.jsonl", [*meta, {"query_id": "nowhere", "latency_ms": 1}])
    result = curator.score(demo_ws.question_set(), trec, workspace=demo_ws, gates=[parse_gate_flag("p95<=5")])
    assert result.artefact["metrics"]["overall"]["negative_pass_rate"] == 1.0
    assert result.artefact["passed"] and result.artefact["latency_ms"]["n"] == len(rows)
    assert any("run.trec.meta.jsonl:" in p and "nowhere" in p for p in result.artefact["run"]["problems"])
