"""A headless chromium driven over the Chrome DevTools protocol, for `curator serve`'s
end-to-end test and bench/review_latency.py's browser path.

Only the system's chromium is used (Debian's `chromium` package, or one named by
$CURATOR_CHROMIUM); nothing downloads a browser. The page is tapped before its own
scripts run: every websocket message from the app is decoded and kept with the time it
arrived and the time of the animation frame after it (when xterm.js has drawn it), and
every keydown is timestamped, all on the page's own clock (`performance.now()`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TAP = r"""
(() => {
  const log = window.__curator = {frames: [], keys: [], tail: ""};
  document.addEventListener("keydown", () => log.keys.push(performance.now()), true);
  const decoder = new TextDecoder("utf-8");
  const Native = window.WebSocket;
  class Tapped extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        const at = performance.now();
        const text = typeof event.data === "string" ? event.data : decoder.decode(event.data);
        // the tail of the previous message too: a word cut between two messages is found
        const entry = {at, drawn: null, text: log.tail + text};
        log.tail = text.slice(-80);
        log.frames.push(entry);
        requestAnimationFrame(() => { entry.drawn = performance.now(); });
      });
    }
  }
  window.WebSocket = Tapped;
  // The first message at or after index `since` whose text has `needle`, once drawn.
  log.waitFor = (needle, since, timeoutMs) => new Promise((resolve) => {
    const started = performance.now();
    const look = () => {
      for (let i = since; i < log.frames.length; i++) {
        const f = log.frames[i];
        if (f.text.includes(needle) && f.drawn !== null) {
          resolve({index: i, at: f.at, drawn: f.drawn, key: log.keys[log.keys.length - 1] ?? null});
          return;
        }
      }
      if (performance.now() - started > timeoutMs) { resolve(null); return; }
      setTimeout(look, 1);
    };
    look();
  });
})();
"""

KEYS = {  # key -> (key, code, virtual key code, text)
    "enter": ("Enter", "Enter", 13, "\r"),
    "escape": ("Escape", "Escape", 27, ""),
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(argv: list[str], cwd: Path, port: int, timeout: float = 20) -> Iterator[str]:
    """Run a server (`argv`, in `cwd`) until it listens on `port`; yield its URL, then stop
    it. Its output goes to a temporary file (a pipe nobody reads could block it), quoted
    in the error when it never listens."""
    with tempfile.TemporaryFile() as out:
        server = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while True:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
                if server.poll() is not None or time.monotonic() > deadline:
                    out.seek(0)
                    said = out.read().decode(errors="replace")
                    raise RuntimeError(f"{' '.join(argv[:3])} did not listen on {port}: {said}")
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/"
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def find_chromium() -> str | None:
    """The system's chromium: $CURATOR_CHROMIUM, else `chromium` / `chromium-browser` on PATH."""
    named = os.environ.get("CURATOR_CHROMIUM")
    if named:
        return named if Path(named).exists() else None
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    return None


class DevToolsError(RuntimeError):
    pass


class Page:
    """One tab, over its DevTools websocket (websocket-client, synchronous)."""

    def __init__(self, url: str):
        import websocket

        self.socket = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.next_id = 0

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:  # events in between are not needed: the page keeps its own log
            reply = json.loads(self.socket.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise DevToolsError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str) -> None:
        self.send("Page.enable")
        self.send("Page.addScriptToEvaluateOnNewDocument", source=TAP)
        self.send("Page.navigate", url=url)

    def frames(self) -> int:
        return int(self.evaluate("window.__curator ? window.__curator.frames.length : 0"))

    def wait_for(self, needle: str, since: int = 0, timeout: float = 20.0) -> dict[str, float]:
        """The first app message at or after `since` with `needle` in it, once drawn: its
        arrival, draw and the last keydown times (ms, page clock). Raises on timeout."""
        found = self.evaluate(
            f"window.__curator.waitFor({json.dumps(needle)}, {since}, {int(timeout * 1000)})")
        if not found:
            raise DevToolsError(f"the served app never showed {needle!r} in {timeout:.0f} s")
        return found  # type: ignore[no-any-return]

    def focus_terminal(self) -> None:
        """xterm.js reads keys from its hidden textarea."""
        self.evaluate("document.querySelector('.xterm-helper-textarea').focus(), true")

    def press(self, key: str) -> None:
        """One key: a letter or digit, or a name in KEYS."""
        if key in KEYS:
            name, code, vk, text = KEYS[key]
        else:
            name, code, vk, text = key, f"Key{key.upper()}" if key.isalpha() else f"Digit{key}", ord(key.upper()), key
        down: dict[str, Any] = {"type": "keyDown", "key": name, "code": code, "windowsVirtualKeyCode": vk}
        if text:
            down["text"] = text
        self.send("Input.dispatchKeyEvent", **down)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=name, code=code, windowsVirtualKeyCode=vk)

    def type(self, text: str) -> None:
        for char in text:
            self.press(char)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.socket.close()


class Chromium:
    """A headless chromium of its own (a fresh profile in a temporary folder)."""

    def __init__(self, executable: str, size: tuple[int, int] = (1280, 800)):
        self.profile = Path(tempfile.mkdtemp(prefix="curator-chromium-"))
        self.process = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             f"--window-size={size[0]},{size[1]}", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.port = self._port()

    def _port(self, timeout: float = 30.0) -> int:
        marker = self.profile / "DevToolsActivePort"  # chromium writes its port here
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise DevToolsError(f"chromium exited ({self.process.returncode}): {err[-500:]}")
            with contextlib.suppress(OSError, ValueError, IndexError):
                return int(marker.read_text().splitlines()[0])
            time.sleep(0.05)
        raise DevToolsError("chromium did not open its DevTools port")

    def page(self) -> Page:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as reply:
            targets = json.load(reply)
        for target in targets:
            if target.get("type") == "page":
                return Page(target["webSocketDebuggerUrl"])
        raise DevToolsError("chromium has no page")

    def new_page(self) -> Page:
        """A second tab (its own websocket to the served app, so its own app process)."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as reply:
            return Page(json.load(reply)["webSocketDebuggerUrl"])

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr:
            self.process.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)
