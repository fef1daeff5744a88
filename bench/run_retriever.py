"""`curator run` against a local HTTP BM25 retriever, beside a bare httpx2 loop.

The bench starts the retriever (BM25 over the shared prometheus-docs corpus, in a
separate server process that logs its own time per request, from the request line read
to the response written), then sends 1,000 queries through curator's runner at
concurrency 1 and 8, and the same requests through a bare httpx2.AsyncClient loop timed
per request the same way. Reported per concurrency: throughput against the bare loop
(goal >= 0.9x at 8), client CPU per request, and the overhead per request (latency minus
the server's own time, p50/p95) of curator *and* of the bare loop, so curator's own
share (the difference) stands beside what the HTTP client costs by itself (goal p50 <=
1 ms). At concurrency 8 the overhead includes queueing at the one-process server.

    python bench/run_retriever.py [--queries 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpora" / "prometheus-docs"
WORD = re.compile(r"[a-z0-9]+")


def _paragraphs() -> list[tuple[str, str]]:
    docs = []
    for path in sorted(CORPUS.rglob("*.md")):
        for n, para in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n\n")):
            if len(para.split()) >= 8:
                docs.append((f"{path.relative_to(CORPUS)}#{n}", para))
    return docs


class BM25:
    def __init__(self, docs: list[tuple[str, str]]):
        self.ids = [d for d, _ in docs]
        self.tfs = [Counter(WORD.findall(t.lower())) for _, t in docs]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.avg = sum(self.lens) / len(self.lens)
        df: Counter[str] = Counter()
        self.postings: dict[str, list[int]] = {}
        for i, tf in enumerate(self.tfs):
            for w in tf:
                df[w] += 1
                self.postings.setdefault(w, []).append(i)
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        scores: dict[int, float] = {}
        for w in set(WORD.findall(query.lower())):
            for i in self.postings.get(w, ()):
                tf = self.tfs[i][w]
                scores[i] = scores.get(i, 0.0) + self.idf[w] * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * self.lens[i] / self.avg))
        best = sorted(scores.items(), key=lambda item: -item[1])[:k]
        return [(self.ids[i], s) for i, s in best]


def serve(port_file: str, log_file: str) -> None:
    index = BM25(_paragraphs())
    log = open(log_file, "a", encoding="utf-8")  # noqa: SIM115 - open for the server's life

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = 1 << 16  # headers and body in one send: no Nagle / delayed-ACK stall

        def log_message(self, *args: object) -> None:
            return None

        def parse_request(self) -> bool:
            # The request line has just been read: the request has arrived. Its header
            # parsing (http.client's email parser, ~0.1 ms) is the server's time too.
            self.received = time.perf_counter()
            return super().parse_request()

        def do_POST(self) -> None:  # noqa: N802
            start = time.perf_counter()
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            hits = index.search(body["q"], body["k"])
            data = json.dumps({"results": [{"id": d, "score": s} for d, s in hits]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            end = time.perf_counter()
            log.write(json.dumps({"q": body["q"], "ms": (end - self.received) * 1000,
                                  "handler_ms": (end - start) * 1000}) + "\n")
            log.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def _queries(n: int) -> list[str]:
    words = [w for _, t in _paragraphs()[:400] for w in WORD.findall(t.lower()) if len(w) > 3]
    return [f"{words[(i * 7) % len(words)]} {words[(i * 13 + 5) % len(words)]} q{i}" for i in range(n)]


async def _bare(url: str, queries: list[str], k: int, concurrency: int) -> dict[str, float]:
    """The bare loop; returns each query's latency (ms), timed around the request and the
    JSON decoding as curator's runner times its own."""
    import httpx2

    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    latencies: dict[str, float] = {}
    async with httpx2.AsyncClient(timeout=10, limits=limits, trust_env=False) as client:
        todo = list(reversed(queries))

        async def worker() -> None:
            while todo:
                q = todo.pop()
                start = time.perf_counter()
                body = json.dumps({"q": q, "k": k}).encode()
                response = await client.post(url, content=body, headers={"content-type": "application/json"})
                response.json()
                latencies[q] = (time.perf_counter() - start) * 1000

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def bare_loop(url: str, queries: list[str], k: int, concurrency: int) -> tuple[float, dict[str, float]]:
    """The bare loop's wall time, timed as curator's runner times itself (around
    asyncio.run, client creation and closing included), and its latencies."""
    start = time.perf_counter()
    latencies = asyncio.run(_bare(url, queries, k, concurrency))
    return time.perf_counter() - start, latencies


def stdlib_loop(url: str, queries: list[str], k: int) -> tuple[float, dict[str, float]]:
    """The floor at concurrency 1: stdlib http.client on one kept-alive connection (no
    proxies, no pool, no async), timed per request the same way."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    latencies: dict[str, float] = {}
    start_all = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
    for q in queries:
        start = time.perf_counter()
        conn.request("POST", parts.path, body=json.dumps({"q": q, "k": k}).encode(),
                     headers={"content-type": "application/json"})
        json.loads(conn.getresponse().read())
        latencies[q] = (time.perf_counter() - start) * 1000
    conn.close()
    return time.perf_counter() - start_all, latencies


def _server_times(log_file: Path) -> tuple[dict[str, float], list[float]]:
    """Per query the server's own time (ms, request line read to response written), and
    the share of it before the handler (reading and parsing the request headers)."""
    server, parsing = {}, []
    for line in log_file.read_text().splitlines():
        record = json.loads(line)
        server[record["q"]] = record["ms"]
        parsing.append(record["ms"] - record["handler_ms"])
    return server, parsing


def _run_latencies(run_file: Path, queries: list[str]) -> dict[str, float]:
    latencies = {}
    for line in run_file.read_text().splitlines():
        record = json.loads(line)
        if "latency_ms" in record:
            latencies[queries[int(record["query_id"][1:])]] = record["latency_ms"]
    return latencies


def _overhead(server: dict[str, float], latencies: dict[str, float]) -> list[float]:
    """Per request: the client's measured latency minus the server's own time."""
    return [ms - server[q] for q, ms in latencies.items() if q in server]


def client_cpu(n: int = 3000, concurrency: int = 8) -> tuple[float, float]:
    """Client CPU per request (us), curator's runner and the bare loop, over an in-memory
    httpx2 transport answering 10 hits: no sockets and no server, so the figure hardly
    moves with the machine's load, unlike wall-clock throughput."""
    import httpx2

    from curator.harness.adapters import HttpAdapter, RetrieverSpec
    from curator.harness.runner import run_retriever
    from curator.models import Case

    answer = json.dumps({"results": [{"id": f"doc{i}.md#{i}", "score": 1.0 / (i + 1)} for i in range(10)]}).encode()

    def transport() -> httpx2.MockTransport:
        return httpx2.MockTransport(lambda _request: httpx2.Response(
            200, content=answer, headers={"content-type": "application/json"}))

    class InMemory(HttpAdapter):
        async def start(self) -> None:
            await super().start()
            await self.client.aclose()
            self.client = httpx2.AsyncClient(transport=transport(), trust_env=False, verify=False)

    async def bare(queries: list[str]) -> None:
        async with httpx2.AsyncClient(transport=transport(), trust_env=False, verify=False) as client:
            todo = list(reversed(queries))

            async def worker() -> None:
                while todo:
                    body = json.dumps({"q": todo.pop(), "k": 10}).encode()
                    response = await client.post("http://bench/search", content=body,
                                                 headers={"content-type": "application/json"})
                    response.json()

            await asyncio.gather(*(worker() for _ in range(concurrency)))

    queries = [f"alerting rule number {i}" for i in range(n)]
    cases = [Case(query_id=f"q{i}", query=q, slice="bench", relevant=[{"id": "x"}]) for i, q in enumerate(queries)]
    spec = RetrieverSpec("bench", kind="http", url="http://bench/search", body='{"q": "{query}", "k": {k}}',
                         hits="results")
    out = Path(tempfile.mkdtemp(prefix="bench-cpu-")) / "run.jsonl"
    ours, theirs = [], []
    for _ in range(5):
        start = time.process_time()
        asyncio.run(bare(queries))
        theirs.append(time.process_time() - start)
        start = time.process_time()
        run_retriever(InMemory(spec, concurrency), cases, out, k=10, concurrency=concurrency, retries=0)
        ours.append(time.process_time() - start)
    return statistics.median(ours) / n * 1e6, statistics.median(theirs) / n * 1e6


def _report(concurrency: int, n: int, rounds: int, runs: dict[str, list[float]], cpu: dict[str, list[float]],
            p50: dict[str, list[float]], p95: dict[str, list[float]], parsing: list[float], failed: int) -> None:
    med = {name: {"wall": statistics.median(runs[name]), "cpu": statistics.median(cpu[name]) * 1000 / n,
                  "p50": statistics.median(p50[name]), "p95": statistics.median(p95[name])} for name in runs}
    ours, bare = med["curator"], med["bare"]
    ratios = ", ".join(f"{b / c:.2f}" for b, c in zip(runs["bare"], runs["curator"], strict=True))
    print(f"concurrency {concurrency} ({n} queries, medians of {rounds} alternated rounds, failed {failed}):")
    print(f"  throughput: curator {n / ours['wall']:.0f} q/s, bare httpx2 {n / bare['wall']:.0f} q/s: "
          f"{bare['wall'] / ours['wall']:.2f}x of bare (rounds {ratios}; goal >= 0.9x at concurrency 8)")
    print(f"  client CPU per request: curator {ours['cpu']:.3f} ms, bare httpx2 {bare['cpu']:.3f} ms")
    print(f"  overhead per request (client latency minus the server's own time, request line read to "
          f"response written; its header parsing, p50 {statistics.median(parsing):.3f} ms, is server time):")
    print(f"    bare httpx2 loop: p50 {bare['p50']:.2f} ms, p95 {bare['p95']:.2f} ms  (what the HTTP client costs)")
    if "stdlib" in med:
        floor = med["stdlib"]
        print(f"    stdlib http.client, one kept-alive connection: p50 {floor['p50']:.2f} ms, p95 {floor['p95']:.2f} ms, "
              f"client CPU {floor['cpu']:.3f} ms a request  (the floor of a minimal client)")
    print(f"    curator:          p50 {ours['p50']:.2f} ms, p95 {ours['p95']:.2f} ms  (goal p50 <= 1 ms)")
    print(f"    curator over the bare loop: p50 {ours['p50'] - bare['p50']:+.2f} ms "
          f"(rounds {', '.join(f'{c - b:+.2f}' for c, b in zip(p50['curator'], p50['bare'], strict=True))})")
    if concurrency > 1:
        print(f"    at concurrency {concurrency} both include queueing: the server is one process (threads under "
              f"one GIL), so a request waits while the others are searched")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each loop, alternating (default 3)")
    parser.add_argument("--serve", nargs=2, metavar=("PORT_FILE", "LOG_FILE"))
    args = parser.parse_args()
    if args.serve:
        serve(*args.serve)
        return
    if not CORPUS.is_dir():
        sys.exit(f"no corpus at {CORPUS}")
    sys.path.insert(0, str(ROOT))
    from curator.harness.adapters import HttpAdapter, RetrieverSpec
    from curator.harness.runner import percentile, run_retriever
    from curator.models import Case

    tmp = Path(tempfile.mkdtemp(prefix="bench-run-"))
    port_file, log_file = tmp / "port", tmp / "server.log"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file), str(log_file)])
    try:
        for _ in range(600):
            if port_file.exists() and port_file.read_text():
                break
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port_file.read_text()}/search"
        queries = _queries(args.queries)
        cases = [Case(query_id=f"q{i}", query=q, slice="bench", relevant=[{"id": "x"}]) for i, q in enumerate(queries)]
        spec = RetrieverSpec("bench", kind="http", url=url, body='{"q": "{query}", "k": {k}}', hits="results")
        for concurrency in (1, 8):
            # Rounds alternate which loop goes first, and the median of each is kept: on a
            # shared machine one run's wall time moves by 20% or more. CPU seconds per
            # request (this process only; the server is another) move far less.
            names = ["bare", "curator"] + (["stdlib"] if concurrency == 1 else [])
            runs: dict[str, list[float]] = {name: [] for name in names}
            cpu: dict[str, list[float]] = {name: [] for name in names}
            p50: dict[str, list[float]] = {name: [] for name in names}
            p95: dict[str, list[float]] = {name: [] for name in names}
            parsing: list[float] = []
            for round_no in range(args.rounds):
                for which in (names if round_no % 2 == 0 else names[::-1]):
                    log_file.write_text("")
                    start_cpu = time.process_time()
                    if which == "bare":
                        wall, latencies = bare_loop(url, queries, 10, concurrency)
                    elif which == "stdlib":
                        wall, latencies = stdlib_loop(url, queries, 10)
                    else:
                        outcome = run_retriever(HttpAdapter(spec, concurrency), cases, tmp / "run.jsonl",
                                                k=10, concurrency=concurrency, retries=0)
                        wall, latencies = outcome.wall_s, _run_latencies(tmp / "run.jsonl", queries)
                    cpu[which].append(time.process_time() - start_cpu)
                    runs[which].append(wall)
                    server, parse = _server_times(log_file)
                    overhead = _overhead(server, latencies)
                    p50[which].append(statistics.median(overhead))
                    p95[which].append(percentile(overhead, 95) or 0.0)
                    parsing.extend(parse)
            _report(concurrency, len(queries), args.rounds, runs, cpu, p50, p95, parsing, len(outcome.failed))
        ours, theirs = client_cpu()
        print(f"client CPU per request over an in-memory transport (concurrency 8, 10 hits, run file "
              f"written): curator {ours:.0f} us, bare httpx2 {theirs:.0f} us; with the sockets and server "
              f"of the runs above, curator's extra work is {ours - theirs:.0f} us a request")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
