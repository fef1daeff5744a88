"""Corpus ingest and search at 100,000 passages.

Anchor: a bare sqlite-utils `insert_all` + `enable_fts` of the same passages (the least
any SQLite-backed tool must do). Goal: curator's import <= 1.5x the anchor; FTS search
p95 <= 5 ms over 200 queries.

Input: ../shared/corpora/prometheus-docs chunked by curator, replicated with distinct ids
(`copy-N/...`) to 100,000 passages.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    DATA,
    alternate,
    machine,
    median,
    need_shared,
    percentile,
    record,
    spread,
    time_process,
    today,
)

TARGET = 100_000
PASSAGES = DATA / "ingest-passages.jsonl"


def prepare() -> int:
    """Chunk the corpus once and write the replicated passages as JSONL."""
    from curator.corpus.chunker import chunk_document, detect_format

    docs = need_shared("prometheus-docs", "docs")
    base = []
    for path in sorted(docs.rglob("*.md")):
        rel = path.relative_to(docs).as_posix()
        parsed = chunk_document(path.read_text(encoding="utf-8"), detect_format(rel))
        for i, chunk in enumerate(parsed.chunks):
            base.append((rel, chunk.slug, list(chunk.heading_path), chunk.text, chunk.tokens, i, parsed.title))
    DATA.mkdir(parents=True, exist_ok=True)
    copies = -(-TARGET // len(base))
    written = 0
    with open(PASSAGES, "w", encoding="utf-8") as fh:
        for n in range(copies):
            for rel, slug, heading, text, tokens, ordinal, title in base:
                if written == TARGET:
                    break
                doc = f"copy-{n}/{rel}"
                fh.write(json.dumps({"doc": doc, "id": f"{doc}#{slug}", "heading": heading, "text": text,
                                     "tokens": tokens, "ordinal": ordinal, "title": title}) + "\n")
                written += 1
    return len(base)


def worker(kind: str, db_path: str) -> None:
    """Time only the ingest itself, in a fresh process; print seconds."""
    rows = [json.loads(line) for line in PASSAGES.read_text(encoding="utf-8").splitlines()]
    if kind == "curator":
        from curator.models import DocRevision, PassageRecord
        from curator.workspace import Workspace

        ws = Workspace.init(db_path)
        docs: dict[str, DocRevision] = {}
        for r in rows:
            doc = docs.get(r["doc"])
            if doc is None:
                doc = docs[r["doc"]] = DocRevision(doc_id=r["doc"], revision="r1", passages=[], path=r["doc"],
                                                   committed_at="2026-11-01T00:00:00Z", title=r["title"])
            doc.passages.append(PassageRecord(id=r["id"], text=r["text"], heading_path=r["heading"],
                                              tokens=r["tokens"], ordinal=r["ordinal"], title=r["title"]))
        start = time.perf_counter()
        ws.import_documents(docs.values())
        elapsed = time.perf_counter() - start
        assert ws.corpus_stats().passages == len(rows)
    else:
        import sqlite_utils

        db = sqlite_utils.Database(str(Path(db_path) / "bare.db"))
        db.enable_wal()
        records = [
            {"id": r["id"], "revision": "r1", "doc_id": r["doc"], "heading": " › ".join(r["heading"]),
             "text": r["text"], "tokens": r["tokens"]}
            for r in rows
        ]
        start = time.perf_counter()
        db["passages"].insert_all(records, batch_size=500)
        db["passages"].enable_fts(["heading", "text"])
        elapsed = time.perf_counter() - start
    print(f"{elapsed:.6f}")


def _timed(kind: str) -> float:
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, __file__, "--worker", kind, tmp], capture_output=True, text=True,
                             check=True).stdout
    return float(out.strip().splitlines()[-1])


def search_latency() -> tuple[float, float, int]:
    from curator.workspace import Workspace

    rows = [json.loads(line) for line in PASSAGES.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(42)
    words = [w for r in rng.sample(rows, 400) for w in r["text"].split() if w.isalpha() and len(w) > 4]
    queries = [" ".join(rng.sample(words, rng.randint(2, 6))) for _ in range(200)]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess_import(tmp)
        ws = Workspace.open(tmp)
        for q in queries[:20]:
            ws.search(q)
        times = []
        hits = 0
        for q in queries:
            start = time.perf_counter()
            hits += bool(ws.search(q, limit=10))
            times.append((time.perf_counter() - start) * 1000)
        ws.close()
    return percentile(times, 50), percentile(times, 95), hits


def subprocess_import(tmp: str) -> None:
    import subprocess

    subprocess.run([sys.executable, __file__, "--worker", "curator", tmp], check=True, capture_output=True)


def end_to_end_add() -> tuple[float, int]:
    """Whole `curator corpus add` of the original docs folder (chunking included)."""
    docs = need_shared("prometheus-docs", "docs")
    with tempfile.TemporaryDirectory() as tmp:
        from curator.workspace import Workspace

        Workspace.init(tmp).close()
        elapsed, rss = time_process([str(Path(sys.executable).with_name("curator")), "-w", tmp, "corpus", "add",
                                     str(docs)], ok=(0, 3), stdout=-3, stderr=-3)
    return elapsed, rss


def main() -> None:
    base = prepare()
    # First, while this process is small: a forked child's peak RSS counts the parent's
    # pages until it execs.
    add_time, add_rss = end_to_end_add()
    runs = alternate({"curator": lambda: _timed("curator"), "bare": lambda: _timed("bare")}, repeat=3)
    ratios = [c / b for c, b in zip(runs["curator"], runs["bare"], strict=True)]
    p50, p95, hits = search_latency()
    rate = TARGET / median(runs["curator"])
    ratio = median(ratios)
    table = f"""\
Date {today()}, {machine()}. Input: prometheus-docs chunked into {base} passages,
replicated with distinct ids to {TARGET:,} passages. 1 warm-up, then 3 alternating runs
per side, each in a fresh process timing the ingest call only.

| measure | curator | anchor: sqlite-utils insert_all + enable_fts | ratio (median of pairs) | goal | verdict |
|---|---|---|---|---|---|
| ingest {TARGET:,} passages (s) | {median(runs['curator']):.2f} ({spread(runs['curator'])}) | {median(runs['bare']):.2f} ({spread(runs['bare'])}) | {ratio:.2f}x | <= 1.5x | {'met' if ratio <= 1.5 else 'missed'} |
| passages/s | {rate:,.0f} | {TARGET / median(runs['bare']):,.0f} | | | |
| FTS search p50 / p95 over 200 queries (ms) | {p50:.2f} / {p95:.2f} | | | p95 <= 5 ms | {'met' if p95 <= 5 else 'missed'} |

Also: whole-process `curator corpus add` of the {base}-passage prometheus-docs folder
(reading, chunking, git revisions, storing): {add_time:.2f} s, peak RSS {add_rss / 1024:.0f} MB.
{hits}/200 queries had hits.
"""
    print(table)
    record("Corpus ingest and search (`bench/corpus_ingest.py`)", table)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
