"""The real console script: `curator review --second-pass` in a pseudo-terminal, and
`curator agreement` on what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from curator.review import ReviewSession
from tests.terminal import spawn
from tests.tui.conftest import build_workspace, lines

CURATOR = str(Path(sys.executable).parent / "curator")
pytestmark = pytest.mark.slow


def first_review(root: Path) -> None:
    ws = build_workspace(root)
    session = ReviewSession(ws, reviewer="ana")
    session.start()
    while (card := session.next_card()) is not None:
        if "backlog" in card.query:
            session.bin(card)
            continue
        card.apply_slice(card.slice or "paraphrase")
        card.set_label(card.rows[0].id, "primary")
        session.keep(card)
    session.close()
    ws.close()


def env(reviewer: str) -> dict[str, str]:
    out = {**os.environ, "TERM": "xterm-256color", "CURATOR_REVIEWER": reviewer, "COLUMNS": "", "LINES": ""}
    return {k: v for k, v in out.items() if v}


def test_second_pass_in_a_real_terminal(tmp_path):
    root = tmp_path / "ws"
    first_review(root)
    cases = (root / "datasets/main/cases.jsonl").read_bytes()
    child = spawn(CURATOR, ["review", "--second-pass", "--sample", "2", "--seed", "3"], cwd=str(root),
                          env=env("bo"), dimensions=(40, 120), encoding="utf-8", codec_errors="replace",
                          timeout=20)
    try:
        child.expect("CARRIER-E1042|cutoff|backlog")  # a card is up (words arrive apart)
        child.send("x")
        child.expect("binned")
        child.send("x")
        judged = root / "datasets/main/judgments.jsonl"
        deadline = time.monotonic() + 15
        while len(lines(judged)) < 2 and time.monotonic() < deadline:
            child.expect([pexpect.TIMEOUT, "binned"], timeout=0.2)  # keep reading the screen
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    written = lines(root / "datasets/main/judgments.jsonl")
    assert [(j["decision"], j["reviewer"]) for j in written] == [("bin", "bo"), ("bin", "bo")]
    assert (root / "datasets/main/cases.jsonl").read_bytes() == cases
    report = subprocess.run([CURATOR, "agreement", "--json"], cwd=root, env=env("bo"), capture_output=True,
                            text=True, check=True)
    data = json.loads(report.stdout)
    assert data["overall"]["pairs"] == 2 and data["reviewers"] == ["ana", "bo"]


def test_second_pass_of_ones_own_decisions_is_refused(tmp_path):
    root = tmp_path / "ws"
    first_review(root)
    child = spawn(CURATOR, ["review", "--second-pass"], cwd=str(root), env=env("ana"),
                          dimensions=(24, 80), encoding="utf-8", codec_errors="replace", timeout=20)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "nothing left for ana to judge" in child.before and "--reviewer" in child.before
    assert "Traceback" not in child.before
