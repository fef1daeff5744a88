"""`curator score`, `compare`, `history`, `baseline` on real workspaces, files and git."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import curator
from curator.scoring.artefact import SCHEMA, list_artefacts, read_artefact
from curator.scoring.runs import read_run

BM25 = "retriever-runs/bm25.jsonl"


@pytest.fixture
def demo_ws(demo_ws):
    """The demo without the runs its build step stored, so each test sees only its own."""
    for path in demo_ws.runs_dir.glob("*.json"):
        path.unlink()
    return demo_ws


def _run_lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / BM25).read_text().splitlines()]


def _write_run(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _active(ws) -> dict:
    return {q: c for q, c in ws.question_set().read().cases.items() if c.status == "active"}


def test_demo_score_shows_gates_passing_and_failing(demo_ws, run_cli) -> None:
    result = run_cli(["score", BM25], cwd=demo_ws.root)
    assert result.exit_code == 1, result.output
    assert "gate pass" in result.output and "gate FAIL" in result.output
    assert "short by" in result.output  # a red gate says by how much
    stored = list_artefacts(demo_ws.runs_dir)
    assert len(stored) == 1 and stored[0].name.endswith("-nogit.json")
    art = read_artefact(stored[0])
    assert art["schema"] == SCHEMA and art["run"]["path"] == BM25
    assert len(art["run"]["sha256"]) == 64 and len(art["set"]["sha256"]) == 64
    assert art["set"]["rev"] == demo_ws.question_set().read().lines
    assert art["latency_ms"]["p95"] is not None
    assert set(art["questions"]) == set(_active(demo_ws))
    failing = [v for v in art["gates"] if not v["passed"]]
    assert failing and all(v["slice"] in result.output for v in failing)
    kinds = {q["failure"] for q in art["questions"].values()}
    assert {"miss", "false_positive"} <= kinds
    for question in art["questions"].values():
        assert len(question["top"]) <= 5 and "ranks" in question and "slice" in question


def test_format_overrides_detection(demo_ws, run_cli) -> None:
    """A JSONL run read as TREC: every line is a problem, every case missing (exit 3)."""
    result = run_cli(["score", BM25, "--format", "trec", "--no-gates", "--no-write", "--json"], cwd=demo_ws.root)
    assert result.exit_code == 3, result.output
    data = json.loads(result.stdout)
    assert data["run"]["format"] == "trec" and data["run"]["queries"] == 0
    assert len(data["run"]["problems"]) == len(_run_lines(demo_ws.root))
    assert sorted(data["missing"]) == sorted(_active(demo_ws))


def test_score_json_no_gates_exits_zero(demo_ws, run_cli) -> None:
    result = run_cli(["score", BM25, "--no-gates", "--json", "--k", "3", "--name", "bm25 base"], cwd=demo_ws.root)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["config"]["k"] == [3, 9] and data["gates"] == [] and data["passed"]
    assert data["artefact"].endswith("-bm25-base.json")
    assert {f["failure"] for f in data["failures"]} >= {"miss"}
    assert 0 < data["metrics"]["overall"]["success@3"] < 1


def test_gate_flags_replace_the_config_gates(demo_ws, run_cli) -> None:
    ok = run_cli(["score", BM25, "--gate", "recall@15>=0.5:overall", "--gate", "p95<=100000", "--no-write"],
                 cwd=demo_ws.root)
    assert ok.exit_code == 0, ok.output
    assert not list_artefacts(demo_ws.runs_dir)
    bad = run_cli(["score", BM25, "--gate", "recall@15>=0.5:nosuchslice"], cwd=demo_ws.root)
    assert bad.exit_code == 1 and "no cases" in bad.output
    typo = run_cli(["score", BM25, "--gate", "sucess@5>=0.5"], cwd=demo_ws.root)
    assert typo.exit_code == 2 and "unknown gate metric 'sucess@5'" in typo.output


def test_latency_gate_fails_without_latency(demo_ws, run_cli, tmp_path: Path) -> None:
    rows = _run_lines(demo_ws.root)
    for row in rows:
        row.pop("latency_ms")
    path = _write_run(tmp_path / "nolat.jsonl", rows)
    result = run_cli(["score", str(path), "--gate", "p95<=250"], cwd=demo_ws.root)
    assert result.exit_code == 1 and "none of 12 scored queries carry latency_ms" in result.output


def test_bad_lines_are_reported_and_the_rest_scored(demo_ws, run_cli, tmp_path: Path) -> None:
    rows = _run_lines(demo_ws.root)
    text = json.dumps(rows[0]) + "\n{not json\n" + '{"results": []}\n'
    text += json.dumps({"query_id": rows[1]["query_id"], "results": [{"score": 1}]}) + "\n"
    text += "".join(json.dumps(r) + "\n" for r in rows[2:])
    path = tmp_path / "run.jsonl"
    path.write_text(text)
    result = run_cli(["score", str(path), "--no-gates"], cwd=demo_ws.root)
    assert result.exit_code == 3, result.output
    assert f"{path}:2: not valid JSON" in result.stderr
    assert f"{path}:3: missing query_id" in result.stderr
    assert f"{path}:4: query {rows[1]['query_id']}: result 1 needs an id" in result.stderr
    art = read_artefact(list_artefacts(demo_ws.runs_dir)[0])
    assert art["missing"] == [rows[1]["query_id"]]
    assert len(art["run"]["problems"]) == 3
    assert art["questions"][rows[0]["query_id"]]["failure"] != "missing"


def test_trec_and_ranx_runs_score_like_the_jsonl(demo_ws, tmp_path: Path) -> None:
    rows = _run_lines(demo_ws.root)
    trec = tmp_path / "run.trec"
    ranx = tmp_path / "run.json"
    lines, obj = [], {}
    for row in rows:
        n = len(row["results"])
        obj[row["query_id"]] = {}
        for rank, item in enumerate(row["results"], 1):
            lines.append(f"{row['query_id']} Q0 {item['id']} {rank} {n - rank} bm25")
            obj[row["query_id"]][item["id"]] = n - rank
    trec.write_text("\n".join(lines) + "\nbroken line\n")
    ranx.write_text(json.dumps(obj))
    base = curator.score(demo_ws.question_set(), read_run(demo_ws.root / BM25), workspace=demo_ws, gates=[])
    from_trec = curator.score(demo_ws.question_set(), trec, workspace=demo_ws, gates=[])
    from_ranx = curator.score(demo_ws.question_set(), ranx, workspace=demo_ws, gates=[])
    assert from_trec.artefact["run"]["format"] == "trec" and from_ranx.artefact["run"]["format"] == "ranx"
    assert from_trec.problems == [f"{trec}:{len(lines) + 1}: expected 6 fields `qid Q0 docno rank score tag`, found 2"]
    for other in (from_trec, from_ranx):
        # the same metrics; only the JSONL run carries latency
        assert {**other.overall, "latency_ms": None} == {**base.overall, "latency_ms": None}
        assert other.overall["latency_ms"]["n"] == 0 and base.overall["latency_ms"]["n"] == base.overall["latency_ms"]["of"]
        assert other.artefact["config"]["tie_rule"].startswith("score descending")


def test_missing_run_file_and_missing_set_are_clear(demo_ws, run_cli) -> None:
    result = run_cli(["score", "nope.jsonl"], cwd=demo_ws.root)
    assert result.exit_code == 1 and "nope.jsonl: no such run file" in result.output
    result = run_cli(["score", BM25, "--set", "other"], cwd=demo_ws.root)
    assert result.exit_code == 1 and "no question set 'other'" in result.output


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def test_artefact_records_git_sha_and_dirty_flag(demo_ws) -> None:
    root = demo_ws.root
    _git(root, "init", "-q")
    _git(root, "add", "curator.toml", "datasets", BM25)
    _git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "set")
    sha = _git(root, "rev-parse", "HEAD").strip()
    clean = curator.score(demo_ws.question_set(), root / BM25, workspace=demo_ws, write=True, label="clean")
    assert clean.artefact["workspace"] == {"root": str(root), "git_sha": sha, "dirty": False}
    assert clean.path.name.endswith(f"-{sha[:7]}-clean.json")
    with (root / "curator.toml").open("a") as fh:
        fh.write("\n# edited\n")
    dirty = curator.score(demo_ws.question_set(), root / BM25, workspace=demo_ws, write=True, label="clean")
    assert dirty.artefact["workspace"]["dirty"] is True
    assert dirty.path != clean.path and clean.path.exists()  # never overwritten


def test_compare_names_fixed_broken_and_regressions(demo_ws, run_cli, tmp_path: Path) -> None:
    root = demo_ws.root
    cases = _active(demo_ws)
    rows = _run_lines(root)
    arts = {}
    base = curator.score(demo_ws.question_set(), root / BM25, workspace=demo_ws, write=True, label="before")
    passing = [q for q, v in base.questions.items() if not v["failure"]]
    failing = [q for q, v in base.questions.items() if v["failure"] == "miss"]
    tagged = next(q for q in passing if "regression" in cases[q].tags)
    frozen = next(q for q in passing if "regression" not in cases[q].tags and q != tagged)
    fixed = failing[0]
    for row in rows:
        qid = row["query_id"]
        if qid in (tagged, frozen):
            row["results"] = [{"id": "faq.md#nothing", "score": 1.0}]
        if qid == fixed:
            row["results"] = [{"id": r.id, "score": 9.0} for r in cases[qid].relevant] + row["results"]
    after = _write_run(tmp_path / "after.jsonl", rows)
    arts["after"] = curator.score(demo_ws.question_set(), after, workspace=demo_ws, write=True, label="after")
    frozen_dir = root / "datasets" / "main" / "frozen"
    frozen_dir.mkdir()
    (frozen_dir / "2026-11-30.json").write_text(json.dumps({"query_ids": [frozen]}))
    (frozen_dir / "broken.json").write_text("{oops")

    plain = run_cli(["compare", "before", "after"], cwd=root)
    assert plain.exit_code == 0, plain.output
    assert "fixed (1)" in plain.output and fixed in plain.output
    assert "broken (2)" in plain.output and tagged in plain.output and frozen in plain.output
    assert "broken.json" in plain.stderr  # an unreadable manifest is reported, not fatal
    gated = run_cli(["compare", "previous", "latest", "--fail-on-regression", "--json"], cwd=root)
    assert gated.exit_code == 1
    diff = json.loads(gated.stdout)
    assert sorted(e["query_id"] for e in diff["regressions"]) == sorted([tagged, frozen])
    slice_delta = diff["slices"][cases[tagged].slice]["metrics"]["success@5"]["delta"]
    assert slice_delta < 0
    same = run_cli(["compare", "before", "before", "--fail-on-regression"], cwd=root)
    assert same.exit_code == 0 and "no question changed" in same.output


def test_history_per_slice_and_per_question(demo_ws, run_cli, tmp_path: Path) -> None:
    root = demo_ws.root
    rows = _run_lines(root)
    target = rows[0]["query_id"]
    curator.score(demo_ws.question_set(), root / BM25, workspace=demo_ws, write=True, label="one")
    rows[0]["results"] = [{"id": "x", "score": 1.0}] * 3 + rows[0]["results"]
    curator.score(demo_ws.question_set(), _write_run(tmp_path / "two.jsonl", rows), workspace=demo_ws,
                  write=True, label="two")
    result = run_cli(["history"], cwd=root)
    assert result.exit_code == 0, result.output
    assert "success@5 per slice over 2 runs" in result.output
    assert any(ch in result.output for ch in "▁▂▃▄▅▆▇█")
    data = json.loads(run_cli(["history", target, "--json"], cwd=root).stdout)
    ranks = [r["first_relevant_rank"] for r in data["runs"]]
    assert ranks[1] is not None and ranks[1] == ranks[0] + 1  # three copies of x count once
    missing = run_cli(["history", "no-such-question"], cwd=root)
    assert missing.exit_code == 1 and "no-such-question" in missing.output


def test_baseline_writes_a_run_for_every_active_case(demo_ws, run_cli) -> None:
    result = run_cli(["baseline", "--out", "runs-in/bm25.jsonl", "--limit", "7"], cwd=demo_ws.root)
    assert result.exit_code == 0, result.output
    run = read_run(demo_ws.root / "runs-in" / "bm25.jsonl")
    assert set(run.queries) == set(_active(demo_ws))
    assert all(len(r.ids) <= 7 and r.latency_ms is not None for r in run.queries.values())
    assert not run.problems


def test_console_script_end_to_end(demo_ws, tmp_path: Path) -> None:
    script = shutil.which("curator", path=str(Path(sys.executable).parent))
    assert script, "the curator console script is not installed next to this Python"
    proc = subprocess.run([script, "score", BM25], cwd=demo_ws.root, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "gate FAIL" in proc.stdout and "artefact: runs/" in proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("ref", ["latest", "nosuch"])
def test_compare_without_artefacts_is_a_clear_error(demo_ws, run_cli, ref: str) -> None:
    result = run_cli(["compare", ref, "latest"], cwd=demo_ws.root)
    assert result.exit_code == 1
    assert "only 0 stored run artefacts" in result.output or "no such run artefact" in result.output


def test_a_torn_set_line_is_reported_and_the_rest_scored(demo_ws, run_cli) -> None:
    cases_path = demo_ws.question_set().cases_path
    active = len(_active(demo_ws))
    with cases_path.open("a") as fh:
        fh.write('{"query_id": "half-writ')  # a crash mid-append leaves no newline
    result = run_cli(["score", BM25, "--no-gates", "--no-write"], cwd=demo_ws.root)
    assert result.exit_code == 0, result.output
    assert "set:" in result.stderr and "cases.jsonl" in result.stderr
    assert f"{active} cases" in result.stdout
