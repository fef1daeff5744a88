"""`curator serve` in a real browser: the console script serves the review app, Debian's
chromium (headless, over the DevTools protocol) opens it, types the reviewer's name and
the keys of one keep; the case line is then on disk. And what `serve` refuses."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from curator.models import CandidateIn
from curator.workspace import Workspace
from tests.browser.cdp import Chromium, Page, find_chromium, free_port, serving
from tests.tui.conftest import build_workspace, set_files

CURATOR = str(Path(sys.executable).parent / "curator")


def _missing() -> str | None:
    """Why the browser test cannot run here, or None."""
    try:
        import textual_serve  # noqa: F401
        import websocket  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[test]')"
    if find_chromium() is None:
        return ("no chromium on this machine: `apt-get install -y chromium` (Debian/Ubuntu), "
                "or set CURATOR_CHROMIUM to a chromium binary; no browser is downloaded")
    return None


@contextlib.contextmanager
def serving_app(root: Path, *args: str) -> Iterator[str]:
    port = free_port()
    with serving([CURATOR, "serve", "--port", str(port), *args], root, port) as url:
        yield url


@contextlib.contextmanager
def browser():
    chromium = Chromium(find_chromium() or "chromium")
    try:
        yield chromium
    finally:
        chromium.close()


def _start(page: Page, url: str, name: str) -> None:
    page.open(url)
    page.wait_for("Your name")
    page.focus_terminal()
    since = page.frames()
    page.type(name)
    page.press("enter")
    page.wait_for("reviewed", since)  # the header: a card is on screen


def _owners(root: Path) -> list[str]:
    ws = Workspace.open(root)
    try:
        rows = ws.db.execute("SELECT lease_owner FROM candidates WHERE lease_owner IS NOT NULL").fetchall()
    finally:
        ws.close()
    return [r[0] for r in rows]


@pytest.mark.slow
def test_a_keep_in_the_browser_writes_the_case(tmp_path):
    if reason := _missing():
        pytest.skip(reason)
    root = tmp_path / "ws"
    build_workspace(root).close()
    with serving_app(root, "--set", "main") as url, browser() as chromium:
        page = chromium.page()
        _start(page, url, "webana")
        page.wait_for("CARRIER-E1042 mean")
        since = page.frames()
        page.press("p")
        page.press("k")
        page.wait_for("kept as", since)
        # the tab's own session holds the next cards' leases, under the typed name
        owners = _owners(root)
        assert owners and all(o.startswith("webana@") for o in owners), owners
        page.close()
    ws = Workspace.open(root)
    try:
        cases, changes = set_files(ws)
    finally:
        ws.close()
    assert [(c["query"], c["reviewer"]) for c in cases] == [("what does CARRIER-E1042 mean", "webana")]
    assert cases[0]["relevant"][0]["id"] == "errors/carrier-e1042.md#carrier-e1042-label-rejected"
    assert changes[0]["action"] == "add"


@pytest.mark.slow
def test_two_tabs_are_two_sessions_with_their_own_cards(tmp_path):
    if reason := _missing():
        pytest.skip(reason)
    root = tmp_path / "ws"
    ws = build_workspace(root)
    ws.add_candidates([CandidateIn(query=f"extra question {n}", source_kind="manual") for n in range(8)])
    ws.close()
    with serving_app(root, "--set", "main") as url, browser() as chromium:
        first = chromium.page()
        _start(first, url, "ana")
        first.wait_for("CARRIER-E1042 mean")
        second = chromium.new_page()
        _start(second, url, "ana")  # the same person in a second tab
        # the first tab holds its card and three prefetched: the second gets the next
        second.wait_for("extra question")
        sessions = {o.split("@")[1] for o in _owners(root)}
        assert len(sessions) == 2, sessions
        first.close()
        second.close()


def run_curator(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CURATOR, *args], cwd=root, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.7", "::"])
def test_a_non_loopback_host_is_refused_without_allow_remote(tmp_path, host):
    root = tmp_path / "ws"
    build_workspace(root).close()
    done = run_curator(root, "serve", "--host", host)
    assert done.returncode == 1
    assert f"--host {host} is not a loopback address" in done.stderr
    assert "--allow-remote" in done.stderr and "Traceback" not in done.stderr


def test_loopback_names_and_addresses():
    from curator.cli.serve import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.1.1") and not is_loopback("no-such-host.invalid")


def test_the_session_command_is_only_for_serve(tmp_path):
    root = tmp_path / "ws"
    build_workspace(root).close()
    done = run_curator(root, "serve-session")
    assert done.returncode == 1
    assert "curator serve" in done.stderr and "Traceback" not in done.stderr
    assert "serve-session" not in run_curator(root, "--help").stdout  # hidden


def test_a_bad_reviewer_name_is_refused(tmp_path):
    root = tmp_path / "ws"
    build_workspace(root).close()
    done = run_curator(root, "serve", "--reviewer", "ana@home")
    assert done.returncode == 2
    assert "without @" in done.stderr
