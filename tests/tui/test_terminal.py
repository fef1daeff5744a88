"""The real `curator review` console script in a pseudo-terminal: a person's keystrokes,
then the files; and `kill -9` right after a keep."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

import pexpect
import pytest

from curator.review import ReviewSession
from curator.verify import verify
from curator.workspace import Workspace
from tests.terminal import Terminal, spawn
from tests.tui.conftest import build_workspace, set_files

CURATOR = str(Path(sys.executable).parent / "curator")
pytestmark = pytest.mark.slow


def review_in_pty(root: Path, size: tuple[int, int] = (24, 80)) -> Terminal:
    env = {**os.environ, "TERM": "xterm-256color", "CURATOR_REVIEWER": "pty-user", "COLUMNS": "", "LINES": ""}
    env = {k: v for k, v in env.items() if v}
    return spawn(CURATOR, ["review"], cwd=str(root), env=env, dimensions=size,
                         encoding="utf-8", codec_errors="replace", timeout=20)


def test_review_in_a_real_terminal(tmp_path):
    build_workspace(tmp_path / "ws").close()
    child = review_in_pty(tmp_path / "ws")
    try:
        child.expect("CARRIER-E1042 mean")
        child.send("p")
        child.send("k")
        child.expect("dhl cutoff")
        child.send("x")
        child.expect("label backlog")
        child.send("u")  # undo the bin: the dhl card comes back
        child.expect("dhl cutoff")
        child.send("q")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    ws = Workspace.open(tmp_path / "ws")
    cases, changes = set_files(ws)
    assert [(c["query"], c["reviewer"]) for c in cases] == [("what does CARRIER-E1042 mean", "pty-user")]
    assert changes[0]["action"] == "add"
    assert ws.candidate(1).state == "kept"
    assert [d.action for d in ws.decisions(2)] == ["bin", "undo"] and ws.candidate(2).state == "pending"
    # quitting gave every lease back
    assert ws.db.execute("SELECT count(*) FROM candidates WHERE lease_owner IS NOT NULL").fetchone()[0] == 0
    ws.close()


def test_sigkill_right_after_keep_loses_nothing(tmp_path):
    root = tmp_path / "ws"
    build_workspace(root).close()
    cases_path = root / "datasets" / "main" / "cases.jsonl"
    child = review_in_pty(root)
    try:
        child.expect("CARRIER-E1042 mean")
        child.send("p")
        child.send("k")
        deadline = time.monotonic() + 15
        while not (cases_path.exists() and cases_path.stat().st_size) and time.monotonic() < deadline:
            with contextlib.suppress(pexpect.TIMEOUT):
                child.read_nonblocking(65536, timeout=0.001)
        os.kill(child.pid, signal.SIGKILL)  # the moment the case line exists
        child.wait()
    finally:
        child.close(force=True)
    ws = Workspace.open(root)
    assert "CARRIER-E1042 mean" in cases_path.read_text(encoding="utf-8")
    # the next session finishes the interrupted append and knows the candidate is kept,
    # whether or not the change-log line and the decision were written before the kill
    session = ReviewSession(ws, reviewer="next")
    session.start()
    cases, changes = set_files(ws)
    assert [c["query"] for c in cases] == ["what does CARRIER-E1042 mean"]
    assert len(changes) == 1
    assert verify(ws.question_set("main")).ok
    assert ws.candidate(1).state == "kept" and ws.candidate(1).query_id == cases[0]["query_id"]
    assert [(d.action, d.reviewer) for d in ws.decisions(1)] == [("keep", "pty-user")]  # not "next"
    served = [c.candidate.id for c in iter(session.next_card, None)]
    assert 1 not in served
    session.close()
    ws.close()


def test_a_crash_exits_non_zero(tmp_path):
    """An app that dies on an error (here the benchmark's trace file cannot be written at
    quit: its path is a directory) must not exit 0, so a script or CI sees it. (An error
    inside the running app takes `app.return_code`, which `curator review` passes on.)"""
    root = tmp_path / "ws"
    build_workspace(root).close()
    (tmp_path / "trace").mkdir()
    env = {**os.environ, "TERM": "xterm-256color", "CURATOR_REVIEWER": "pty-user",
           "CURATOR_REVIEW_TRACE": str(tmp_path / "trace")}
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    child = spawn(CURATOR, ["review"], cwd=str(root), env=env, dimensions=(24, 80),
                          encoding="utf-8", codec_errors="replace", timeout=20)
    child.expect("CARRIER-E1042")
    child.send("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus not in (0, None)


CRASHING = """
import sys
from curator.cli import main
from curator.tui.widgets.passages import PassageList
from tests.terminal import Terminal, spawn

def broken(self, card):  # a bug in the app: an unhandled exception while a card is drawn
    raise RuntimeError("a bug in the passage list")

PassageList.show_card = broken
sys.argv = ["curator", "review"]
main()
"""


def test_a_crash_inside_the_running_app_exits_70_with_a_report(tmp_path):
    """An unhandled exception inside the running app (a bug, injected into the passage
    list of the real console entry point) ends it with one line, a report and exit 70,
    which `curator review` passes on; no traceback."""
    root = tmp_path / "ws"
    build_workspace(root).close()
    env = {**os.environ, "TERM": "xterm-256color", "CURATOR_REVIEWER": "pty-user", "TMPDIR": str(tmp_path)}
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES", "CURATOR_DEBUG")}
    child = spawn(sys.executable, ["-c", CRASHING], cwd=str(root), env=env, dimensions=(24, 80),
                          encoding="utf-8", codec_errors="replace", timeout=20)
    try:
        child.expect("internal error")  # the app says so as it ends
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 70
    assert "Traceback" not in child.before
    (report,) = tmp_path.glob("curator-crash-*.txt")
    assert "command: curator review" in report.read_text()
    assert "RuntimeError: a bug in the passage list" in report.read_text()


BUGGY = '''
import sys
from curator.tui.app import ReviewApp
from curator.workspace import Workspace


class Buggy(ReviewApp):
    """The review app with a bug: a look-up that fails once the card is up."""

    def on_mount(self) -> None:
        super().on_mount()
        self.set_timer(1.0, self.look_up)

    def look_up(self) -> None:
        passage = "a passage that names anna.kowalski@example.com"
        {}[passage]


app = Buggy(Workspace.open(sys.argv[1]), reviewer="pty-user")
app.run()
sys.exit(app.exit_status())
'''


@pytest.mark.parametrize("debug", [False, True])
def test_a_bug_in_the_app_ends_with_a_report_not_a_traceback_of_its_data(tmp_path, debug: bool) -> None:
    """Textual prints a crash's traceback with the frames' local variables (here a
    passage with an e-mail address); the app writes curator's report instead and the
    command exits 70. CURATOR_DEBUG=1 gives Textual's traceback back."""
    build_workspace(tmp_path / "ws").close()
    script = tmp_path / "buggy.py"
    script.write_text(BUGGY)
    env = {**os.environ, "TERM": "xterm-256color", "TMPDIR": str(tmp_path), "COLUMNS": "", "LINES": "",
           "CURATOR_DEBUG": "1" if debug else ""}
    child = spawn(sys.executable, [str(script), str(tmp_path / "ws")], env={k: v for k, v in env.items() if v},
                  dimensions=(24, 120), encoding="utf-8", codec_errors="replace", timeout=30)
    try:
        child.expect(pexpect.EOF)  # the card was up for a second, then the bug
        shown = child.before
    finally:
        child.close(force=True)
    reports = list(tmp_path.glob("curator-crash-*.txt"))
    if debug:
        assert "Traceback" in shown and "anna.kowalski@example.com" in shown and not reports
        return
    assert child.exitstatus == 70
    assert "internal error (KeyError) in curator review" in shown and "Traceback" not in shown
    assert "anna.kowalski" not in shown
    assert len(reports) == 1 and "look_up" in reports[0].read_text()
    assert "anna.kowalski" not in reports[0].read_text()
