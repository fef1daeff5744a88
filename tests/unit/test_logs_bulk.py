"""The bulk screens (curator/logs/bulk.py) and the bulk paths of grouping and clustering
give what the one-query-at-a-time rules give."""

from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curator.logs import grouping
from curator.logs.bulk import UPPER, Joined
from curator.logs.cluster import Clusters, cluster
from curator.logs.grouping import Grouped, cleaned, kept, maybe_personal
from curator.logs.normalise import compare_key, identifier_signature, normalize_query
from curator.logs.redact import Redactor

_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_:=@+(/.<>'\t\x00\x1b\x7f"
_PIECES = [
    "token", "secret", "passw", "pwd", "api-key", "apikey", "key ABCDEFGHIJKLMNOPQRSTUV", "basic x", "sid=",
    "session", "npm_", "passport", "born", "dob", "d.o.b", "birth", "sk-", "pk_", "rk-", "ghp_", "xox", "aiza",
    "akia", "asia", "eyj", "bearer", "hooks.slack", "/api/webhooks", "mii" + "a" * 60, "-----begin", "-0a-", "+4",
    "(0", "@", ":", "=", "12 34", "1.2", "4155550134", "4111 1111 1111 1111", "GB82WEST12345698765432",
    "QQ 12 34 56 C", "for Anna", "From Bob", "customer Carl", "user Dana", "client Eve", "https://x.example",
    "www.example.com", "aaaaaa", "<script>", "union select", "' or 1=1", "  ", " ", "é", "Straße", "\n", "İ",
    "ManifestQueueStuk", "etcdGRPCRequestsSlow", "CARRIER-E1042",
]


def _queries(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        q = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 18)))
        for _ in range(rng.randint(0, 2)):
            piece = rng.choice(_PIECES)
            piece = "".join(ch.upper() if rng.random() < 0.2 else ch for ch in piece)
            at = rng.randint(0, len(q))
            q = q[:at] + piece + q[at:]
        out.append(q)
    return out


def test_the_screens_mark_every_query_the_rules_match() -> None:
    queries = _queries(20_000)
    joined = Joined(queries)
    one_by_one = ~joined.plain | (joined.lengths == 0) | joined.untidy()
    upper = joined.with_codes(UPPER)
    one_by_one |= joined.with_prefixes(grouping._prefixes("words"), lowered=True)
    one_by_one |= upper & joined.with_prefixes(grouping._prefixes("names"), lowered=True)
    personal = [k for k, q in enumerate(queries) if maybe_personal(grouping.tidy(q))]
    untidy = [k for k, q in enumerate(queries) if grouping.tidy(q) != q]
    assert len(personal) > 2000 and len(untidy) > 2000  # the test reaches both
    assert not [queries[k] for k in personal + untidy if not one_by_one[k]]
    assert not one_by_one.all()  # and it is a screen


def test_touched_marks_every_string_a_pattern_matches_alone() -> None:
    queries = _queries(5000, seed=2)
    joined = Joined(queries)
    for pattern in (grouping._NAME_CUE, grouping._PROBE, re.compile(r"\s+[A-Z]"), re.compile(r"\d(?:[ .-]\d)")):
        hit = joined.touched(pattern)
        assert all(hit[k] for k, q in enumerate(queries) if joined.plain[k] and pattern.search(q))


@pytest.mark.parametrize("chunk", [grouping.JOIN_CHUNK, 997])  # one join, or one per chunk of queries
def test_cleaned_equals_the_one_query_rule(chunk: int) -> None:
    queries = _queries(20_000, seed=3)
    weights = [1 + k % 3 for k in range(len(queries))]
    bulk_redactor = Redactor({})
    texts, norms = cleaned(queries, weights, bulk_redactor, chunk=chunk)
    one_redactor = Redactor({})
    expected = []
    for q, w in zip(queries, weights, strict=True):
        text = grouping.tidy(q)
        if maybe_personal(text):
            text = one_redactor.redact(text, w)
        expected.append(text)
    assert texts == expected
    assert norms == [normalize_query(t) if t else "" for t in expected]
    assert dict(bulk_redactor.counts) == dict(one_redactor.counts) and bulk_redactor.counts


@pytest.mark.parametrize("chunk", [grouping.JOIN_CHUNK, 997])
def test_kept_equals_the_one_norm_rule(chunk: int) -> None:
    texts, norms = cleaned(_queries(20_000, seed=4), [1] * 20_000, Redactor({}))
    pairs = list(dict(zip(norms, texts, strict=True)).items())
    pairs = [(n, t) for n, t in pairs if n]
    grouped = Grouped(None, [], [], [])  # type: ignore[arg-type]
    grouped.norms = [n for n, _t in pairs]
    grouped.surfaces = [t for _n, t in pairs]
    filtered: dict[str, int] = {}
    rows = np.flatnonzero(kept(grouped, 3, 40, [], filtered, chunk=chunk)).tolist()
    expected_filtered: dict[str, int] = {}
    expected = []
    for j, (norm, surface) in enumerate(pairs):
        reason = grouping._reason(norm, surface, 3, 40, [])
        if reason is None:
            expected.append(j)
        else:
            expected_filtered[reason] = expected_filtered.get(reason, 0) + 1
    assert rows == expected and filtered == expected_filtered
    assert any(r.startswith("noise") for r in filtered)


def test_a_one_off_joins_the_cluster_of_the_repeated_query_it_is_a_typo_of() -> None:
    norms = ["dhl cutoff time", "manifest queue stuck", "dhl cutof time", "cutoff time dhl",
             "manifest queue stuk", "carrier-e1042 label", "carrier-e1043 label", "unrelated words here"]
    counts = [40, 30, 1, 1, 1, 9, 1, 1]
    for bulk_after in (0, 10**9):  # the bulk path and the one-by-one path agree here
        found = cluster(norms, counts, 88, norms, bulk_after=bulk_after)
        lead = [int(found.leaders[found.of[i]]) for i in range(len(norms))]
        assert lead == [0, 1, 0, 0, 1, 5, 6, 7], bulk_after


def test_one_offs_naming_other_identifiers_stay_apart_in_bulk() -> None:
    surfaces = ["etcdGRPCRequestsSlow alert", "etcdGRPCWriteRequestsSlow alert", "ManifestQueueStuk alert",
                "ManifestQueueStuck alert"]
    norms = [s.lower() for s in surfaces]
    found = cluster(norms, [50, 1, 1, 20], 80, surfaces, bulk_after=0)
    lead = [int(found.leaders[found.of[i]]) for i in range(len(norms))]
    assert lead == [0, 1, 3, 3]


def test_bulk_and_one_by_one_agree_for_one_offs_that_join_a_repeated_query() -> None:
    rng = random.Random(5)
    words = ["dhl", "ups", "label", "queue", "stuck", "cutoff", "time", "refund", "order", "login", "reset", "page", "alert", "carrier"]
    heads = list(dict.fromkeys(" ".join(rng.sample(words, rng.randint(2, 4))) for _ in range(300)))
    tail = []
    for h in heads:  # a typo of each head, asked once, and a one-off of new words
        at = rng.randrange(len(h))
        tail.append(h[:at] + h[at + 1 :])
        tail.append(" ".join(rng.sample(words, 3)) + f" zq{rng.randint(0, 99)}")
    norms = list(dict.fromkeys(heads + tail))
    counts = [5 + rng.randint(0, 50) if i < len(heads) else 1 for i in range(len(norms))]
    surfaces = norms
    exact = cluster(norms, counts, 88, surfaces, bulk_after=10**9)
    bulk = cluster(norms, counts, 88, surfaces, bulk_after=0)
    lead_exact = exact.leaders[exact.of]
    lead_bulk = bulk.leaders[bulk.of]
    # one-offs that joined a repeated query's cluster, each the only one-off with its
    # comparison form (two sharing one join each other first: a join the bulk path drops)
    forms = Counter(compare_key(norms[i]) for i in range(len(heads), len(norms)))
    joined_a_head = [i for i in range(len(heads), len(norms))
                     if counts[int(lead_exact[i])] > 1 and forms[compare_key(norms[i])] == 1]
    assert len(joined_a_head) > 100
    assert [int(lead_bulk[i]) for i in joined_a_head] == [int(lead_exact[i]) for i in joined_a_head]
    assert (lead_bulk[: len(heads)] == lead_exact[: len(heads)]).all()
    assert all(identifier_signature(s) == () for s in surfaces)


def _pairs(clusters: Clusters) -> list[tuple[int, list[int]]]:
    return [(int(clusters.leaders[c]), clusters.members(c)) for c in range(len(clusters))]


@pytest.mark.parametrize("bulk_after", [0, 10**9])
def test_queries_left_out_by_a_mask_cluster_as_if_the_lists_were_cut(bulk_after: int) -> None:
    rng = random.Random(11)
    words = ["dhl", "ups", "label", "queue", "stuck", "cutoff", "refund", "order", "login", "reset"]
    norms = list(dict.fromkeys(" ".join(rng.sample(words, rng.randint(1, 4))) + rng.choice(["", "s", " 7"])
                               for _ in range(3000)))
    counts = [rng.choice([1, 1, 1, 2, 9]) for _ in norms]
    keep = np.array([rng.random() < 0.7 for _ in norms])
    masked = cluster(norms, counts, 85, norms, bulk_after=bulk_after, kept=keep)
    at = np.flatnonzero(keep).tolist()
    cut = cluster([norms[j] for j in at], [counts[j] for j in at], 85, [norms[j] for j in at], bulk_after=bulk_after)
    # the same clusters (members in the same order, as indices of the whole lists), and none for the left out
    assert [(at[leader], [at[m] for m in members]) for leader, members in _pairs(cut)] == _pairs(masked)
    assert (masked.of[~keep] == -1).all() and (masked.of[keep] >= 0).all()
    assert len(masked) < keep.sum() and len(masked) > 100  # some joined, not all
    assert masked.totals(counts).sum() == sum(counts[j] for j in at)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="ab c12é\n", max_size=8), max_size=12),
       st.lists(st.text(alphabet="ab c12é\n", max_size=8), max_size=12))
@example(leaders=["1\n1"], queries=["1 1"])  # a leader's newline packed as a space once matched a space
def test_blocks_looked_up_in_bulk_are_those_of_their_block_keys(leaders: list[str], queries: list[str]) -> None:
    import numpy as np

    from curator.logs.cluster import BlockIndex
    from curator.logs.normalise import digit_signature

    blocks: dict[str, tuple[list[str], list[int]]] = {}
    for i, form in enumerate(leaders):
        signature = digit_signature(form)
        for mark, piece in (("^", form[:5]), ("$", form[-5:]), ("<", form[:5]), (">", form[-5:])):
            blocks.setdefault(f"{signature}|{mark}{piece}", ([], []))[0].append(form)
            blocks[f"{signature}|{mark}{piece}"][1].append(i)
    index = BlockIndex(blocks)
    forms = np.empty(len(queries), dtype=object)
    forms[:] = queries
    signatures = forms.copy()
    signatures[:] = [digit_signature(q) for q in queries]
    number = {block_key: n for n, block_key in enumerate(blocks)}
    for marks in ("^$", "<>"):
        heads, tails = index.numbers(marks, forms, signatures)
        assert heads.tolist() == [number.get(f"{s}|{marks[0]}{q[:5]}", -1) for q, s in zip(queries, signatures, strict=True)]
        assert tails.tolist() == [number.get(f"{s}|{marks[1]}{q[-5:]}", -1) for q, s in zip(queries, signatures, strict=True)]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="Aa b\t", max_size=4), max_size=12, unique=True),
       st.lists(st.integers(1, 5), min_size=12, max_size=12))
def test_grouping_by_norm_equals_a_dict_of_norms(raws: list[str], weights: list[int]) -> None:
    # exact queries that differ only in case or spacing are one norm, whether they were
    # changed (upper case, untidy) or one of them is its own norm already
    from curator.logs.aggregate import Aggregate
    from curator.logs.grouping import group

    agg = Aggregate()
    for raw, n in zip(raws, weights, strict=False):
        agg.counts[raw] = n
    filtered: dict[str, int] = {}
    grouped = group(agg, Redactor(), filtered)
    expected: dict[str, list[int]] = {}
    for k, raw in enumerate(raws):
        norm = " ".join(raw.split()).lower()
        if norm:
            expected.setdefault(norm, []).append(k)
    assert grouped.norms == list(expected)
    assert [grouped.forms(j) for j in range(len(grouped.norms))] == list(expected.values())
    assert grouped.counts == [sum(weights[k] for k in ks) for ks in expected.values()]
    assert filtered.get("empty query", 0) == sum(weights[k] for k, raw in enumerate(raws) if not raw.split())
