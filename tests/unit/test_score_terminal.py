"""The real `curator score` console script in a pseudo-terminal, as a person runs it:
the progress bar on stderr, the report, the stored artefact and the exit code."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from curator.scoring.artefact import list_artefacts, read_artefact
from tests.terminal import spawn

CURATOR = str(Path(sys.executable).parent / "curator")
BM25 = "retriever-runs/bm25.jsonl"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
pytestmark = pytest.mark.slow


@pytest.fixture
def demo_ws(demo_ws):
    for path in demo_ws.runs_dir.glob("*.json"):
        path.unlink()
    return demo_ws


def run_in_pty(root: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "", "LINES": ""}
    env = {k: v for k, v in env.items() if v}
    child = spawn(CURATOR, ["score", *args], cwd=str(root), env=env, dimensions=(40, 160),
                          encoding="utf-8", codec_errors="replace", timeout=60)
    try:
        output = child.read()
    finally:
        child.close()
    return child.exitstatus, ANSI.sub("", output)


def test_red_gates_exit_1_with_the_report_and_the_artefact(demo_ws) -> None:
    status, output = run_in_pty(demo_ws.root, BM25, "--name", "pty")
    assert status == 1, output
    assert f"Reading {BM25}" in output and re.search(r"Scoring .* \d+/\d+ questions", output), output
    assert "gate FAIL" in output and "gate pass" in output and "Traceback" not in output
    stored = list_artefacts(demo_ws.runs_dir)
    assert len(stored) == 1 and stored[0].name.endswith("-pty.json")
    assert f"artefact: runs/{stored[0].name}" in output
    art = read_artefact(stored[0])
    assert art["passed"] is False and art["run"]["path"] == BM25
    red = [v for v in art["gates"] if not v["passed"]]
    assert red and all(v["slice"] in output for v in red)
    for slice_name, block in art["metrics"]["slices"].items():  # the table shows every slice
        assert re.search(rf"{re.escape(slice_name)}\s+{block['n']}\s", output), slice_name
    active = {q for q, c in demo_ws.question_set().read().cases.items() if c.status == "active"}
    assert set(art["questions"]) == active


def test_green_gates_exit_0_and_json_has_no_bar(demo_ws) -> None:
    status, output = run_in_pty(demo_ws.root, BM25, "--gate", "success@5>=0.1", "--json")
    assert status == 0, output
    assert "Reading" not in output and "questions" not in output.split("{", 1)[0]
    data = json.loads(output[output.index("{"):])
    assert data["passed"] is True and data["gates"][0]["metric"] == "success@5"
    assert Path(data["artefact"]).parent == demo_ws.runs_dir and Path(data["artefact"]).is_file()
