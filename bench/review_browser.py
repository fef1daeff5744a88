"""The review app's browser path, for bench/review_latency.py: `curator serve` opened in
headless chromium (the system's; tests/browser/cdp.py drives it over the DevTools
protocol), keypress to next card drawn, on the page's own clock: the `k` keydown to the
animation frame after the websocket message that carries the next card (its "kept as"
line, drawn in the same frame as the card). Anchor, the same way in the same browser:
the trivial Textual app served by textual-serve.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.browser.cdp import Chromium, Page, find_chromium, free_port, serving

CURATOR = str(Path(sys.executable).parent / "curator")
WINDOW = (1200, 820)  # about 120 x 40 cells at textual-serve's 16 px font


def _timed(page: Page, key: str, needle: str) -> float:
    """ms from `key`'s keydown to the frame after the first message with `needle`."""
    since = page.frames()
    page.press(key)
    found = page.wait_for(needle, since)
    return float(found["drawn"] - found["key"])


def browser_keeps(work: Path, count: int, think: float) -> list[float]:
    """`count` keeps (`p`, then `k`) in the served app; ms per keep, keydown to drawn."""
    port = free_port()
    chromium = Chromium(find_chromium() or "chromium", size=WINDOW)
    argv = [CURATOR, "serve", "--port", str(port), "--reviewer", "bench-browser", "--no-verify"]
    try:
        with serving(argv, work, port) as url:
            page = chromium.page()
            page.open(url)
            page.wait_for("reviewed", timeout=60)
            page.focus_terminal()
            times = []
            for _ in range(count):
                time.sleep(think)
                since = page.frames()
                page.press("p")
                page.wait_for("1 primary", since)
                times.append(_timed(page, "k", "kept as"))
            page.close()
    finally:
        chromium.close()
    return times


def browser_anchor(app: Path, count: int, think: float) -> list[float]:
    """The trivial app (one Static a key changes) served by textual-serve, same timing."""
    port = free_port()
    serve = ("import sys; from textual_serve.server import Server; "
             f"Server(sys.argv[1], host='127.0.0.1', port={port}).serve()")
    chromium = Chromium(find_chromium() or "chromium", size=WINDOW)
    try:
        with serving([sys.executable, "-c", serve, f"{sys.executable} {app}"], app.parent, port) as url:
            page = chromium.page()
            page.open(url)
            page.wait_for("ANCHOR-00000", timeout=60)
            page.focus_terminal()
            times = []
            for i in range(1, count + 1):
                time.sleep(think)
                times.append(_timed(page, "k", f"ANCHOR-{i:05d}"))
            page.close()
    finally:
        chromium.close()
    return times


def available() -> str | None:
    """Why the browser path cannot run here, or None."""
    try:
        import textual_serve  # noqa: F401
        import websocket  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} not installed"
    return None if find_chromium() else "no chromium (apt-get install -y chromium)"
