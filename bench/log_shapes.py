"""Seeded generators of search logs shaped like real ones, for bench/import_logs.py.

Shapes (issue 22):
  a  query + time + user, Zipf over ~330k distinct queries
  b  (a) plus `hits` and `clicks` lists of passage ids and `latency_ms` (a query's hits
     are mostly the same ten ids, one swapped on a fifth of the lines)
  c  a long tail: half the lines are one-off queries (2.7M distinct in 5M lines): three
     words and a word no other line has
  d  UBI-shaped records (OpenSearch User Behavior Insights `ubi_queries`: `user_query`,
     `client_id`, `query_response_hit_ids`, and `query` holding the query DSL as text)
  e  (a) with 0.01% odd lines of each reject kind: broken JSON, a query equal to a key
     name ("query"), binary, over-long (over 1 MiB), missing query field

Every shape is a pure function of (shape, lines, seed): the same file on every machine.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

SHAPES = ("a", "b", "c", "d", "e")
SEED = 20261202
HEAD_DISTINCT = 330_000
ODD_SHARE = 0.0001  # of each reject kind, in shape e
ODD_KINDS = ("broken JSON", "query equal to a key name", "binary", "over-long", "missing field")
_T0 = 1759276800  # 2025-10-01T00:00:00Z

_VOCABULARY = (
    "dhl ups fedex postnl royal mail dpd gls hermes cutoff time pickup window label backlog manifest "
    "queue stuck webhook retry retries parser error code carrier api rate limit outage depot hub "
    "sunday weekday holiday customs invoice refund duplicate shipment reference address validation "
    "packstation printer zpl pdf a4 barcode tracking delay escalation policy runbook alert severity "
    "page oncall replay dlq dead letter config flag key timeout latency p95 high low missing failed "
    "how to what is why does when where reset drain throttle enable disable default change status "
    "return exchange warranty size colour black white red blue shoes jacket shirt dress kids women men "
    "sale discount voucher gift card delivery store opening hours near me order cancel account login"
)
WORDS = _VOCABULARY.split()


def _head(rng: np.random.Generator) -> list[str]:
    """HEAD_DISTINCT distinct queries of 1-6 words (some with an error code)."""
    seen: set[str] = set()
    out: list[str] = []
    words = np.array(WORDS)
    while len(out) < HEAD_DISTINCT:
        lengths = rng.choice([1, 2, 2, 3, 3, 3, 4, 4, 5, 6], size=100_000)
        picks = rng.integers(0, len(WORDS), size=(100_000, 6))
        codes = rng.random(100_000) < 0.1
        numbers = rng.integers(1000, 9999, size=100_000)
        for k in range(100_000):
            q = " ".join(words[picks[k, : lengths[k]]])
            if codes[k]:
                q += f" CARRIER-E{numbers[k]}"
            if q not in seen:
                seen.add(q)
                out.append(q)
                if len(out) == HEAD_DISTINCT:
                    break
    return out


def _token(i: int) -> str:
    """A word no other line has (the misspelt name, the odd product word of a one-off
    query): `i` in letters, a number after it on a tenth of them, as in the head."""
    letters = []
    while True:
        i, r = divmod(i, 26)
        letters.append(chr(97 + r))
        if not i:
            break
    word = "".join(letters)
    return f"{word} {len(word) * 37 + ord(word[0])}" if ord(word[-1]) % 10 == 0 else word


def _zipf_draws(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** 1.05
    return rng.choice(n, size=size, p=weights / weights.sum())


def generate(path: Path, shape: str, lines: int, seed: int = SEED) -> None:
    """Write `lines` lines of `shape` to `path` (via a .tmp file, so a half-written log
    is never taken for a whole one)."""
    rng = np.random.default_rng([seed, SHAPES.index(shape)])
    head = _head(rng)
    picks = _zipf_draws(rng, len(head), lines)
    users = rng.integers(1, 200_000, size=lines)
    one_off = rng.random(lines) < 0.5 if shape == "c" else np.zeros(lines, dtype=bool)
    tail_words = rng.integers(0, len(WORDS), size=(lines, 3)) if shape == "c" else None
    odd = _odd_lines(rng, lines) if shape == "e" else {}
    # a search engine returns much the same ids for a query: its own ten, one of them
    # swapped for another on a fifth of the lines (a re-ranking, a new document)
    hit_ids = None
    if shape in ("b", "d"):
        hit_ids = (picks[:, None] * 7919 + np.arange(10)[None, :]) % 50_000
        drift = rng.random(lines) < 0.2
        hit_ids[drift, rng.integers(0, 10, size=int(drift.sum()))] = rng.integers(0, 50_000, size=int(drift.sum()))
    clicked = rng.integers(0, 4, size=lines) if shape == "b" else None
    latency = rng.integers(5, 900, size=lines) if shape == "b" else None
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        out: list[str] = []
        for i in range(lines):
            if i in odd:
                out.append(odd[i])
            else:
                if one_off[i]:
                    assert tail_words is not None
                    q = f"{WORDS[tail_words[i, 0]]} {WORDS[tail_words[i, 1]]} {WORDS[tail_words[i, 2]]} {_token(i)}"
                else:
                    q = head[picks[i]]
                ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_T0 + i * 2))
                out.append(_line(shape, q, ts, int(users[i]), i, hit_ids, clicked, latency))
            if len(out) >= 50_000:
                fh.write(("\n".join(out) + "\n").encode("utf-8", "surrogateescape"))
                out = []
        if out:
            fh.write(("\n".join(out) + "\n").encode("utf-8", "surrogateescape"))
    tmp.replace(path)


def _line(shape: str, q: str, ts: str, user: int, i: int, hit_ids: np.ndarray | None,
          clicked: np.ndarray | None, latency: np.ndarray | None) -> str:
    if shape == "d":
        assert hit_ids is not None
        hits = json.dumps([f"p{h}" for h in hit_ids[i, :5]])
        dsl = json.dumps(json.dumps({"query": {"match": {"text": q}}}))
        return (f'{{"application": "shop", "query_id": "{i:016x}", "client_id": "c-{user}", '
                f'"user_query": "{q}", "timestamp": "{ts}", "query_attributes": {{}}, '
                f'"query_response_id": "r{i:x}", "query_response_hit_ids": {hits}, "query": {dsl}}}')
    base = f'{{"timestamp": "{ts}", "user_id": "u-{user}", "query": "{q}"'
    if shape == "b":
        assert hit_ids is not None and clicked is not None and latency is not None
        hits = [f"p{h}" for h in hit_ids[i]]
        clicks = hits[: int(clicked[i])]
        return f'{base}, "hits": {json.dumps(hits)}, "clicks": {json.dumps(clicks)}, "latency_ms": {latency[i]}}}'
    return base + ', "page": 1}'


def _odd_lines(rng: np.random.Generator, lines: int) -> dict[int, str]:
    """Line index -> an odd line, ODD_SHARE of the lines (at least one) of each kind."""
    each = max(1, round(lines * ODD_SHARE))
    where = rng.choice(lines, size=each * len(ODD_KINDS), replace=False)
    odd: dict[int, str] = {}
    for k, kind in enumerate(ODD_KINDS):
        for n, i in enumerate(where[k * each: (k + 1) * each]):
            ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_T0 + int(i) * 2))
            if kind == "broken JSON":
                odd[int(i)] = f'{{"timestamp": "{ts}", "user_id": "u-{n}", "query": "label printer'
            elif kind == "query equal to a key name":
                odd[int(i)] = f'{{"timestamp": "{ts}", "user_id": "u-{n}", "query": "query", "page": 1}}'
            elif kind == "binary":  # invalid UTF-8 and a NUL (surrogateescape writes the raw bytes)
                odd[int(i)] = f'{{"timestamp": "{ts}", "query": "\udcff\udcfe\x00 {n}"}}'
            elif kind == "over-long":
                odd[int(i)] = f'{{"timestamp": "{ts}", "query": "{"x" * ((1 << 20) + 10)}"}}'
            else:
                odd[int(i)] = f'{{"timestamp": "{ts}", "user_id": "u-{n}", "page": 1}}'
    return odd


if __name__ == "__main__":  # python bench/log_shapes.py SHAPE LINES PATH
    import sys

    generate(Path(sys.argv[3]), sys.argv[1], int(sys.argv[2]))
