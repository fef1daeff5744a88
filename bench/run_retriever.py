"""`curator run` against a local HTTP BM25 retriever, beside a bare httpx2 loop.

The bench starts the retriever (BM25 over the shared prometheus-docs corpus, in a
separate server process that logs its own time per request), then sends 1,000 queries
through curator's runner at concurrency 1 and 8, and the same requests through a bare
httpx2.AsyncClient loop. Reported: curator's overhead per request (its measured latency
minus the server's own time, p50; goal <= 1 ms) and throughput at concurrency 8 against
the bare loop (goal >= 0.9x).

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
            log.write(json.dumps({"q": body["q"], "ms": (time.perf_counter() - start) * 1000}) + "\n")
            log.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Path(port_file).write_text(str(server.server_address[1]))
    server.serve_forever()


def _queries(n: int) -> list[str]:
    words = [w for _, t in _paragraphs()[:400] for w in WORD.findall(t.lower()) if len(w) > 3]
    return [f"{words[(i * 7) % len(words)]} {words[(i * 13 + 5) % len(words)]} q{i}" for i in range(n)]


async def _bare(url: str, queries: list[str], k: int, concurrency: int) -> None:
    import httpx2

    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(timeout=10, limits=limits, trust_env=False) as client:
        todo = list(reversed(queries))

        async def worker() -> None:
            while todo:
                q = todo.pop()
                body = json.dumps({"q": q, "k": k}).encode()
                response = await client.post(url, content=body, headers={"content-type": "application/json"})
                response.json()

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def bare_loop(url: str, queries: list[str], k: int, concurrency: int) -> float:
    """The bare loop's wall time, timed as curator's runner times itself: around
    asyncio.run, client creation and closing included."""
    start = time.perf_counter()
    asyncio.run(_bare(url, queries, k, concurrency))
    return time.perf_counter() - start


def _overhead(log_file: Path, run_file: Path, queries: list[str]) -> list[float]:
    """Per request: curator's measured latency minus the server's own time (its log)."""
    server = {}
    for line in log_file.read_text().splitlines():
        record = json.loads(line)
        server[record["q"]] = record["ms"]
    overhead = []
    for line in run_file.read_text().splitlines():
        record = json.loads(line)
        query = queries[int(record["query_id"][1:])]
        if "latency_ms" in record and query in server:
            overhead.append(record["latency_ms"] - server[query])
    return overhead


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
            bare_runs, curator_runs, bare_cpu, curator_cpu = [], [], [], []
            for round_no in range(args.rounds):
                for which in (("bare", "curator") if round_no % 2 == 0 else ("curator", "bare")):
                    cpu = time.process_time()
                    if which == "bare":
                        bare_runs.append(bare_loop(url, queries, 10, concurrency))
                        bare_cpu.append(time.process_time() - cpu)
                        continue
                    log_file.write_text("")
                    outcome = run_retriever(HttpAdapter(spec, concurrency), cases, tmp / f"run{concurrency}.jsonl",
                                            k=10, concurrency=concurrency, retries=0)
                    curator_cpu.append(time.process_time() - cpu)
                    curator_runs.append(outcome.wall_s)
                    overhead = _overhead(log_file, tmp / f"run{concurrency}.jsonl", queries)
            bare_s, curator_s = statistics.median(bare_runs), statistics.median(curator_runs)
            per = 1000 / len(queries)
            print(f"concurrency {concurrency}: curator {curator_s:.2f} s ({len(queries) / curator_s:.0f} q/s), "
                  f"bare httpx2 {bare_s:.2f} s ({len(queries) / bare_s:.0f} q/s), medians of {args.rounds}; "
                  f"throughput ratio {bare_s / curator_s:.2f}x of bare (goal >= 0.9; rounds "
                  f"{', '.join(f'{b / c:.2f}' for b, c in zip(bare_runs, curator_runs, strict=True))}); "
                  f"client CPU per request {statistics.median(curator_cpu) * per:.3f} ms vs "
                  f"{statistics.median(bare_cpu) * per:.3f} ms bare; overhead per request p50 "
                  f"{statistics.median(overhead):.2f} ms, p95 {percentile(overhead, 95):.2f} ms (goal p50 <= 1 ms); "
                  f"failed {len(outcome.failed)}")
        ours, theirs = client_cpu()
        print(f"client CPU per request over an in-memory transport (concurrency 8, 10 hits, run file "
              f"written): curator {ours:.0f} us, bare httpx2 {theirs:.0f} us; with the sockets and server "
              f"of the runs above, curator's extra work is {ours - theirs:.0f} us a request")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
