"""The artefact does not depend on whether orjson is installed: the same JSON values, to
the last bit of every float (orjson may spell a float differently: 0.00008 vs 8e-05)."""

from __future__ import annotations

import json
import random

import pytest

import curator
from curator.models import Case, Relevant
from curator.scoring import artefact


def test_orjson_writes_what_the_standard_library_writes() -> None:
    pytest.importorskip("orjson")
    rng = random.Random(1)
    cases = [Case(query_id="u-1", query='größe „quoted"', slice="ß", tags=["x"], relevant=[Relevant(id="a")]),
             Case(query_id="neg", query="none", slice="negative", expect_empty=True, relevant=[])]
    ranked = {"u-1": [("b", 1e-7), ("a", 0.30000000000000004), ("c", 12345678901234.5)], "neg": [("z", -0.0)]}
    for i in range(200):  # floats of every shape: scores, means, reciprocal ranks, nDCG
        cases.append(Case(query_id=f"q{i}", query="q", slice=f"s{i % 3}",
                          relevant=[Relevant(id=f"d{d}") for d in rng.sample(range(30), 3)]))
        ranked[f"q{i}"] = [(f"d{d}", rng.random() * 10 ** rng.randint(-6, 17)) for d in rng.sample(range(30), 20)]
    art = curator.score(cases, ranked, k=[3, 10], label="ünïcode").artefact
    fast, plain = artefact._dumps(art), artefact.dumps_stdlib(art)
    assert fast.endswith(b"}\n") and plain.endswith(b"}\n")
    assert json.loads(fast) == json.loads(plain) == json.loads(json.dumps(art))
