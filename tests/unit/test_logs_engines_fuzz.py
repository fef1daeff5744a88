"""A seeded differential test of the two import-logs engines: generated JSON Lines that
mix, field by field, ordinary and odd values (and whole lines that are odd) are imported
with `engine="python"` (the reference) and `engine="duckdb"`, and the summaries and the
queued candidates must be equal field by field. Deterministic: fixed seeds, one
`random.Random` per log. test_logs_engines.py has the hand-written awkward lines.

What it found is fixed (FOUND keeps the lines), except a time, user, result count or
latency key given twice, which the engines read apart on purpose (KEY_TWICE)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from curator.logs import duck, duck_sql
from curator.logs.aggregate import Aggregate
from curator.logs.fields import Fields
from curator.logs.jsonl import JsonlHandler
from curator.logs.lines import MAX_LINE_BYTES, Window
from curator.logs.reading import read_source
from curator.logs.sources import Source
from tests.unit.test_logs_engines import _import

SEEDS = (11, 23, 37)
LINES = 300
ODD_SHARE = 0.15  # of each field's values: most lines stay plain, and DuckDB counts them
MiB = 1 << 20

QUERIES = ["dhl cutoff time", "DHL cutoff time ", "label backlog", "carrier-e1042 retry",
           "webhook retries", "customs invoice form", "reset password for anna@example.com",
           "caf\u00e9 \U0001f600 dhl", "  padded   query  "]
IDS = ["carriers.md#dhl", "faq.md#cutoffs", "errors.md#carrier-e1042", "webhooks.md#retries", "other#1"]

# Odd values as JSON text, per field
_TIMES = [
    '"2026-10-02 09:30:00"', '"2026-10-02T09:30:00"', '"2026-10-02T09:30:00.5Z"',
    '"2026-10-02T09:30:00.123456Z"', '"2026-10-02T09:30:00.123456789Z"', '"2026-10-02T09:30:00,5Z"',
    '"2026-10-02T09:30:00+00:00"', '"2026-10-02T09:30:00+0000"', '"2026-10-02T09:30:00+00"',
    '"2026-10-02T11:30:00+02:00"', '"2026-10-02T09:30:00-00:00"', '"2026-10-02T04:30:00-05:00"',
    '"2026-10-02T09:30:00z"', '"2026-10-02t09:30:00Z"', '"2026-10-02 09:30:00Z"',
    '" 2026-10-02T09:30:00Z"', '"2026-10-02T09:30:00Z "', '" 026-10-04T08:00:00Z"',
    '"2026-10-02T24:00:00Z"', '"2026-10-02T24:00:00"', '"2026-10-02T23:60:00Z"', '"2026-10-02T23:59:60Z"',
    '"2026-13-01T08:00:00Z"', '"2026-00-10T08:00:00Z"', '"2026-02-30T08:00:00Z"',
    '"2028-02-29T08:00:00Z"', '"2026-02-29T08:00:00Z"', '"1900-02-29T08:00:00Z"',
    '"0000-01-01T00:00:00Z"', '"9999-12-31T23:59:59Z"',
    '"9999-12-31T23:59:59.999999Z"', '"10000-01-01T00:00:00Z"', '"2026-10-02"', '"2026-10-02T09:30Z"',
    '"20261002T093000Z"', '"2026-W40-5"', '"2026-10-02T09:30:00\\u005a"', '"\\u0032026-10-02T09:30:00Z"',
    '"\uff12\uff10\uff12\uff16-10-02T09:30:00Z"', '"2026-10-02T09:30:00+00:00Z"',
    "1759305600", "1759305600000", "1759305600.5", "-1", "0", "1e20", '"1759305600"',
    '"1759305600000"', '"1759305600.5"', '"1e9"', "null", '""', '"   "', "true", "false",
    # epochs DuckDB reads itself (10 and 13 digits) and their neighbours, which it leaves
    "1000000000", "9999999999", "999999999", "10000000000", "100000000000", "100000000001",
    "1000000000000", "9999999999999", "10000000000000", "1759305600999", "01759305600",
    '" 1759305600"', '"1759305600 "', "1759449600", "1759449599999", "1759795200000", "1759795199999",
    # local times with an offset, which DuckDB converts to UTC itself, and their odd neighbours
    '"2026-10-02T09:30:00+02:00"', '"2026-10-02T09:30:00-05:30"', '"2026-10-02 09:30:00+0100"',
    '"2026-10-02T09:30:00.5+02:00"', '"2026-10-02T09:30:00.123456-00:00"', '"2026-10-02T09:30:00.1234567+02:00"',
    '"2026-10-03T01:30:00+02:00"', '"2026-10-02T23:59:59-00:01"', '"2026-10-07T13:00:00+01:00"',
    '"2026-10-02T23:59:60+02:00"', '"2026-10-02T23:60:00+02:00"', '"2026-02-30T08:00:00+01:00"',
    '"2026-10-02T24:00:00+01:00"', '"2026-10-02T09:30:00+24:00"', '"2026-10-02T09:30:00+02:60"',
    '"2026-10-02T09:30:00+02"', '"2026-10-02T09:30:00+02:00:30"', '"2026-10-02T09:30+02:00"',
    '"0001-01-01T00:30:00+01:00"', '"0001-01-01T00:30:00-01:00"', '"9999-12-31T23:30:00-01:00"',
    '"9999-12-31T23:30:00+01:00"', '" 026-10-02T09:30:00+02:00"', '"2026-1-02T09:30:00+02:00"',
    # BigQuery's ` UTC`, nginx's $time_local, the HTTP date (python's alone), and their odd neighbours
    '"2026-10-02 09:30:00 UTC"', '"2026-10-02 09:30:00.123456 UTC"', '"2026-10-02T09:30:00 GMT"',
    '"2026-02-30 09:30:00 UTC"', '"2026-10-02 09:30:60 UTC"', '"2026-10-02 24:00:00 UTC"',
    '"2026-10-02T09:30:00+02:00 UTC"', '"2026-10-02 09:30:00 utc"', '"2026-10-02 09:30:00  UTC"',
    '"02/Oct/2026:09:30:00 +0200"', '"02/Oct/2026:09:30:00 -0000"', '"31/Feb/2026:09:30:00 +0000"',
    '"02/oct/2026:09:30:00 +0000"', '"02/Oct/2026:24:00:00 +0000"', '"02/Oct/2026:09:30:00 +2400"',
    '"2/Oct/2026:09:30:00 +0000"', '"01/Jan/0001:00:30:00 +0100"', '"31/Dec/9999:23:30:00 -0100"',
    '"Fri, 02 Oct 2026 09:30:00 GMT"', '"Fri, 02 Oct 2026 09:30:00 +0200"', '"Fri, 31 Feb 2026 09:30:00 GMT"',
    '{"iso": "2026-10-02T09:30:00Z"}', '["2026-10-02T09:30:00Z"]', '"not a time"',
    # at the edges of OPTIONS' windows
    '"2026-10-03T00:00:00Z"', '"2026-10-02T23:59:59.999999Z"', '"2026-10-03T01:00:00+01:00"',
    '"2026-10-07T12:00:00Z"', '"2026-10-07T11:59:59.999999Z"', '"2026-10-07T12:00:00.000001Z"',
]
_USERS = [
    '"caf\\u00e9"', '"caf\u00e9"', '"q\\"uote"', '"back\\\\slash"', '"\\ud83d\\ude00"', '"tab\\tuser"',
    '" "', '"u1 "', '"0"', "0", "-0", "7", '"7"', "-7", "9223372036854775807", "9223372036854775808",
    "18446744073709551615", "-9223372036854775808", "1.0", "1e16", '"1e+16"', "7.5", "1e2", "null",
    '""', "true", "false", "[1]", '{"id": "u1"}', '"\\u0000"',
]
_QUERIES = [
    '"caf\\u00e9 \\ud83d\\ude00 dhl"', '"caf\\u00e9 dhl"', '"caf\u00e9 dhl"', '"tab\\tin query"',
    '"new\\nline query"', '"quote \\" query"', '"back\\\\slash query"', '"\\/slash query"',
    '"lone \\ud800 surrogate"', '"lone low \\udc00 surrogate"', '"nul \\u0000 query"', '"   "', '""',
    '"\\u0020\\u0020"', '"NaN in the parser"', '"Infinity war"', "42", "4.2", "null", "true", "[]",
    '{"q": "nested"}', '"' + "long query " * 40 + '"', '"' + "y" * 200_000 + '"',
]
_COUNTS = ["0", "-1", "2.5", "2.0", "1e2", '"3"', '" 4 "', '""', "null", "true", str(10**15), str(10**16),
           "[2]"]
_IDS = ['["carriers.md#dhl", "carriers.md#dhl"]', "[1, 2]", "[true, 1.5, null]", '"faq.md#cutoffs, other#2"',
        '{"id": "faq.md#cutoffs"}', '[{"_id": "webhooks.md#retries"}, {"doc_id": 3}]', "[[1]]", "null",
        '""', "[]", "7"]
_RESULTS = ["0", "-0", "0.0", '"0"', '"0.0"', "-1", "1e1", str(10**16), "null", '""', "true", "[0]"]
_LATENCIES = ["12.5", "0.1", "1e2", "1E-2", "-3", '"12"', '"NaN"', '"inf"', "1e308", "1e400", "null",
              "true", '" 7 "', "0.30000000000000004"]
# Another field, whose value only the python reader's JSON parser may refuse
_EXTRAS = ["NaN", "-Infinity", "1e-400", "1e308", "-" + "9" * 308, '"\\ud800"', "[" * 1000 + "]" * 1000,
           '{"a": [1, 2,]}', '{"query": "inner"}', '"query"', '"\\"query\\""',
           "123456789012345678901234567890"]
# Whole lines
_LINES = [
    "", "   \t", "null", "42", '"just text"', '["an", "array"]', "{}", '{"query": "x"',
    '{"query": "x"} junk', '{"query": "x"}{"query": "y"}', '{"query": "x" /* c */}',
    "{'query': 'single quotes'}", '{"query": "x\\x41"}', '{"query": "trailing comma",}',
    '{"query": "x", "n": NaN}', '{"query": Infinity}', '\ufeff{"query": "dhl cutoff time"}',
    '\x00\x01\x02 binary', '{"query": "raw\x01\x02\x03control"}', '{"query": "raw\ttab"}',
    '{"query": "caf\udce9 latin-1"}',
]
# Keys as JSON may spell them: the python reader decodes them, and so does DuckDB
ESCAPED_KEYS = {"query": '"q\\u0075ery"', "timestamp": '"timest\\u0061mp"', "user_id": '"user\\u005fid"',
                "n": '"\\u006e"', "_source": '"\\u005fsource"'}

# Found by this test and fixed: years before 1000, user ids past 64 bits (floats to the
# python reader), numbers past a double, nesting deeper than orjson's 1024 levels
_TIMES += ['"0001-01-01T00:00:00Z"', '"0999-12-31T23:00:00Z"']
_USERS += ["18446744073709551616", "18446744073709551617", "-9223372036854775809", "123456789012345678901234567890"]
_EXTRAS += ["1e400", "-1.8e308", "1" + "0" * 400, "[" * 1100 + "]" * 1100]
ODD = {"query": _QUERIES, "timestamp": _TIMES, "user_id": _USERS, "n": _COUNTS, "hits": _IDS,
       "clicked": _IDS, "result_count": _RESULTS, "latency_ms": _LATENCIES, "note": _EXTRAS, "line": _LINES}

# Keys whose second value the engines must read alike (the python reader keeps the last
# value, DuckDB the first, so DuckDB leaves such lines to it): those that decide what is
# counted or suggested. A time, user, result count or latency key twice is read apart on
# purpose (KEY_TWICE below; docs/logs.md, Engines).
CHECKED_TWICE = ("query", "n", "hits", "clicked")


class _Generator:
    """JSON Lines from one seed: each line's fields present or not, ordinary or odd."""

    def __init__(self, seed: int, users: int = 12) -> None:
        self.rng = random.Random(seed)
        self.users = users  # ordinary user ids: u1 to u<users>
        self.odd = ODD

    def line(self) -> str:
        rng = self.rng
        if rng.random() < 0.06:
            return rng.choice(self.odd["line"])
        fields = self.record()
        roll = rng.random()
        if roll < 0.06:  # a key twice, perhaps spelled with escapes: the python reader keeps the last value
            key = rng.choice([k for k, _ in fields if k in CHECKED_TWICE])
            again = self.ordinary().get(key, '"again"')
            fields.append((ESCAPED_KEYS.get(key, key) if rng.random() < 0.5 else key, again))
        elif roll < 0.1:
            fields = self.escaped(fields)
        elif roll < 0.13:
            fields = [("_source", self.object(fields))]
        elif roll < 0.16:  # beside an `_source`, which the python reader takes when it is an object
            inner = rng.choice([self.object(self.record()), self.object(self.escaped(self.record())), "{}",
                                '{"note": "ok"}', "null", '"text"', "[]"])
            fields.append((rng.choice(["_source", ESCAPED_KEYS["_source"]]), inner))
        return self.object(fields)

    def escaped(self, fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Some keys spelled with escapes."""
        return [(ESCAPED_KEYS.get(k, k) if self.rng.random() < 0.5 else k, v) for k, v in fields]

    def record(self) -> list[tuple[str, str]]:
        """(key, JSON text) pairs, in a random order: each field present or not, ordinary
        or odd."""
        rng = self.rng
        shares = {"query": 1, "timestamp": 0.85, "user_id": 0.8, "n": 0.7, "hits": 0.4, "clicked": 0.25,
                  "result_count": 0.4, "latency_ms": 0.5, "note": 0.15}
        fields = [(key, rng.choice(self.odd[key]) if rng.random() < ODD_SHARE else value)
                  for key, value in self.ordinary().items() if rng.random() < shares[key]]
        rng.shuffle(fields)
        return fields

    def ordinary(self) -> dict[str, str]:
        rng = self.rng
        day, hour, minute = rng.randint(1, 9), rng.randint(0, 23), rng.randint(0, 59)
        return {
            "query": json.dumps(rng.choice(QUERIES), ensure_ascii=rng.random() < 0.5),
            "timestamp": f'"2026-10-{day:02}T{hour:02}:{minute:02}:00Z"',
            "user_id": json.dumps(f"u{rng.randint(1, self.users)}"),
            "n": str(rng.randint(1, 5)),
            "hits": json.dumps(rng.sample(IDS, rng.randint(0, 3))),
            "clicked": json.dumps(rng.sample(IDS, 1)),
            "result_count": str(rng.randint(0, 3)),
            "latency_ms": str(rng.randint(1, 90)),
            "note": '"ok"',
        }

    def object(self, fields: list[tuple[str, str]]) -> str:
        sep, colon = self.rng.choice([(", ", ": "), (",", ":"), (" , ", " : ")])
        keys = [k if k.startswith('"') else json.dumps(k) for k, _ in fields]  # escaped keys come quoted
        return "{" + sep.join(f"{k}{colon}{v}" for k, (_, v) in zip(keys, fields, strict=True)) + "}"


# Every field ordinary: fields are guessed from the first lines
_FIRST = ('{"timestamp": "2026-10-01T08:00:00Z", "user_id": "u1", "n": 1, "query": "dhl cutoff time", '
          '"hits": ["carriers.md#dhl"], "clicked": ["faq.md#cutoffs"], "result_count": 3, "latency_ms": 12}')


def _fuzz_log(path: Path, seed: int, lines: int = LINES, users: int = 12) -> Path:
    """_FIRST, then generated lines: ODD_SHARE of each field odd, some odd lines."""
    generate = _Generator(seed, users)
    return _write(path, [_FIRST] + [generate.line() for _ in range(lines - 1)])


def _catalogue_log(path: Path) -> Path:
    """Each odd value of each field once, on an otherwise ordinary line, and each odd
    line (and one over the 1 MiB limit): what a few random logs might miss."""
    generate = _Generator(0)
    out = [_FIRST, *generate.odd["line"], '{"query": "' + "z" * MiB + '"}']
    for key, values in generate.odd.items():
        for value in values if key != "line" else []:
            out.append(generate.object([(k, value if k == key else v) for k, v in generate.ordinary().items()]))
    return _write(path, out)


def _write(path: Path, lines: list[str]) -> Path:
    data = "\n".join(lines).encode("utf-8", "surrogateescape") + b"\n"  # surrogates: invalid UTF-8
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


# Times of the shape the python reader's fast path takes, and those it turns down (no time
# to Python, or 29 February)
_FAST_TIMES = ['"2026-10-02T09:30:00"', '"2026-10-02T09:30:00.5Z"', '"2026-10-02T09:30:00.123456789Z"',
               '"2026-10-02T09:30:00+00:00"', '"2026-08-31T08:00:00Z"', '"9999-12-31T23:59:59Z"']
_FAST_NO_TIMES = ['"2026-10-02T24:00:00"', '"2026-10-02T23:60:00Z"', '"2026-02-30T08:00:00Z"',
                  '"2026-09-31T08:00:00Z"', '"2026-13-01T08:00:00Z"', '"0000-01-01T00:00:00Z"',
                  '"2028-02-29T08:00:00Z"']  # a time, but left to the line-by-line path


def _plain_fuzz_log(path: Path, seed: int, lines: int = LINES, refused: bool = False) -> Path:
    """Lines of one shape (a time, a user and a query, all plain text), which the python
    reader counts on its fast path (regular expressions over a whole block, taken only
    when every line of the block fits), with ordinary and odd times and users; `refused`
    adds times and users the fast path must turn down (no time to Python, an empty name),
    so such blocks are read line by line."""
    rng = random.Random(seed)
    times = _FAST_TIMES + (_FAST_NO_TIMES if refused else [])
    users = ['"caf\u00e9"', '" "', '"u1 "', '"0"', '"7"', '"\U0001f600"'] + (['""'] if refused else [])
    out = []
    for _ in range(lines):
        day, hour, minute = rng.randint(1, 9), rng.randint(0, 23), rng.randint(0, 59)
        ordinary = f'"2026-10-{day:02}T{hour:02}:{minute:02}:00Z"'
        time = rng.choice(times) if rng.random() < ODD_SHARE else ordinary
        user = rng.choice(users) if rng.random() < ODD_SHARE else f'"u{rng.randint(1, 12)}"'
        query = json.dumps(rng.choice(QUERIES), ensure_ascii=False)
        out.append(f'{{"timestamp": {time}, "user_id": {user}, "query": {query}}}')
    path.write_text("\n".join(out) + "\n")
    return path


OPTIONS = {
    "default": {},
    "a window": {"since": "2026-10-03", "until": "2026-10-07T12:00:00"},
    "a count field": {"count_field": "n"},
    "hits and clicks fields": {"hits_field": "hits", "clicks_field": "clicked"},
}


def _same_import(tmp_path: Path, log: Path, options: dict) -> list[tuple]:
    """Both engines import `log` alike: the whole summary and every queued candidate,
    field by field (as JSON, in which a NaN mean equals itself). Returns the candidates."""
    py_engines, py_summary, py_candidates = _import(tmp_path, "python", log, options)
    duck_engines, duck_summary, duck_candidates = _import(tmp_path, "duckdb", log, options)
    assert (py_engines, duck_engines) == ({"python"}, {"duckdb"})
    assert py_summary["queued"] > 0
    for key in py_summary:
        assert _json(duck_summary[key]) == _json(py_summary[key]), key
    py_by_query = {c[0]: c for c in py_candidates}
    duck_by_query = {c[0]: c for c in duck_candidates}
    assert sorted(duck_by_query) == sorted(py_by_query)
    for query, (_, count, slice_, provenance, suggestions) in py_by_query.items():
        _, duck_count, duck_slice, duck_provenance, duck_suggestions = duck_by_query[query]
        assert (duck_count, duck_slice, duck_suggestions) == (count, slice_, suggestions), query
        for key in provenance.keys() | duck_provenance.keys():
            assert _json(duck_provenance.get(key)) == _json(provenance.get(key)), (query, key)
    return py_candidates


def _json(value) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("options", list(OPTIONS))
@pytest.mark.parametrize("seed", SEEDS)
def test_engines_agree_on_generated_lines(tmp_path: Path, seed: int, options: str) -> None:
    _same_import(tmp_path, _fuzz_log(tmp_path / "fuzz.jsonl", seed), OPTIONS[options])


@pytest.mark.parametrize("options", list(OPTIONS))
def test_engines_agree_on_each_odd_value(tmp_path: Path, options: str) -> None:
    _same_import(tmp_path, _catalogue_log(tmp_path / "catalogue.jsonl"), OPTIONS[options])


def test_engines_agree_on_a_gzipped_log(tmp_path: Path) -> None:
    """DuckDB decompresses it; the lines it refuses are read again from the stream."""
    _same_import(tmp_path, _fuzz_log(tmp_path / "fuzz.jsonl.gz", SEEDS[0]), {})


def test_engines_agree_on_each_odd_value_gzipped(tmp_path: Path) -> None:
    """Many lines DuckDB's reader refuses (invalid UTF-8, over 1 MiB), read back in
    order from one decompressing stream."""
    _same_import(tmp_path, _catalogue_log(tmp_path / "catalogue.jsonl.gz"), {})


def test_engines_agree_on_queries_asked_by_many_users(tmp_path: Path) -> None:
    """Users beyond what pass 1 settles: the users pass, and queries shown as 100+ users."""
    candidates = _same_import(tmp_path, _fuzz_log(tmp_path / "users.jsonl", SEEDS[0], lines=2000, users=1000), {})
    assert any(provenance.get("users_at_least") for _, _, _, provenance, _ in candidates)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("refused", [False, True])
def test_engines_agree_on_lines_for_the_python_fast_path(tmp_path: Path, seed: int, refused: bool) -> None:
    _same_import(tmp_path, _plain_fuzz_log(tmp_path / "plain.jsonl", seed, refused=refused), {})


def test_the_generated_lines_are_counted_by_both_engines(tmp_path: Path) -> None:
    """What makes the comparisons about DuckDB: it counts more lines of a generated log
    itself than it leaves to the python reader, and leaves it a good share; the plain
    log is taken by the python reader's fast path, unless it has what the path refuses."""
    for seed in SEEDS:
        log = _fuzz_log(tmp_path / f"fuzz{seed}.jsonl", seed)
        fields = Fields(**read_source(Source(log.name, log), engine="duckdb").fields)
        reader = duck_sql.Reader(lambda _fraction: None)
        try:
            source = duck_sql.lines_source(log, None, MAX_LINE_BYTES)
            agg, doubtful, _ = duck.scan(reader, source, duck_sql.JsonSql(fields, Window()), log.name)
        finally:
            reader.close()
        assert agg.parsed > doubtful > 0.25 * LINES
        handler = JsonlHandler(Fields(query="query", time="timestamp", user="user_id"))
        for refused in (False, True):
            plain = _plain_fuzz_log(tmp_path / f"plain{seed}.jsonl", seed, refused=refused).read_bytes()
            assert handler.try_fast(plain, Aggregate()) != refused


# Lines the engines disagreed on, found by the generator and fixed (before the first: an
# ordinary line, so that both engines queue something), and the options they need.
_ORDINARY = '{"timestamp": "2026-10-01T08:00:00Z", "user_id": "u1", "query": "dhl cutoff time"}'
FOUND = {
    "the query key twice, once spelled with escapes (DuckDB takes the first)": (
        ['{"query": "label backlog", "q\\u0075ery": "webhook retries"}'], {}),
    "the count key twice": (['{"query": "label backlog", "n": 2, "n": 5}'], {"count_field": "n"}),
    "the hits key twice": (['{"query": "label backlog", "hits": ["carriers.md#dhl"], "hits": ["faq.md#cutoffs"]}'],
                           {"hits_field": "hits"}),
    "a number beyond a double (python: broken JSON)": (['{"query": "label backlog", "note": 1e400}'], {}),
    "an integer of 400 digits (python: broken JSON)": (['{"query": "label backlog", "note": 1' + "0" * 400 + "}"], {}),
    "nesting deeper than orjson's 1024 levels (python: broken JSON)": (
        ['{"query": "label backlog", "note": ' + "[" * 1100 + "]" * 1100 + "}"], {}),
    "user ids past 64 bits, one float to the python reader": (
        ['{"query": "label backlog", "user_id": 18446744073709551616}',
         '{"query": "label backlog", "user_id": 18446744073709551617}'], {}),
    "negative user ids past 64 bits": (
        ['{"query": "label backlog", "user_id": -9223372036854775809}',
         '{"query": "label backlog", "user_id": -9223372036854775810}'], {}),
    "a year before 1000 (python: an unpadded year, '1-01-01T00:00:00')": (
        ['{"query": "label backlog", "timestamp": "0001-01-01T00:00:00Z", "result_count": 2}'], {}),
    "a year before 1000 and --since (python: '999-12-31T23:00:00' >= '2026-10-01' as text)": (
        ['{"query": "label backlog", "timestamp": "0999-12-31T23:00:00Z", "result_count": 2}'],
        {"since": "2026-10-01"}),
    # pipeline.py's _Group.add_users takes USERS_CAP - len(users) of a new set before the
    # union, so users both sets have are lost: one query whose users pass 1 left open
    # (60 on lines DuckDB counts, 60 on lines it leaves to python, 20 of them on both) ...
    "users from both readers, 100 in all": (
        [f'{{"query": "label backlog", "user_id": "u{i}"}}' for i in range(60)]
        + [f'{{"query": "label backlog", "user_id": "u{i}", "note": "NaN"}}' for i in range(40, 100)], {}),
    # ... and two forms of one query (the python engine shows 88 users, DuckDB 83)
    "users of two forms of a query, 100 in all": (
        [f'{{"query": "label backlog", "user_id": "u{i}"}}' for i in range(60)]
        + [f'{{"query": "Label backlog", "user_id": "u{i}"}}' for i in range(40, 100)], {}),
    # the python reader's fast path (a block of plain lines) and its line-by-line path differ
    "fast path: hour 24": (['{"timestamp": "2026-10-02T24:00:00", "user_id": "u1", "query": "label backlog"}'], {}),
    "fast path: February 30": (
        ['{"timestamp": "2026-02-30T08:00:00Z", "user_id": "u1", "query": "label backlog"}'], {}),
    "fast path: year 0": (['{"timestamp": "0000-01-01T00:00:00Z", "user_id": "u1", "query": "label backlog"}'], {}),
    "fast path: a line that is no JSON (NaN)": (
        ['{"timestamp": "2026-10-02T08:00:00Z", "user_id": "u2", "query": "label backlog", "x": NaN}'], {}),
    "fast path: an empty user id": (['{"timestamp": "2026-10-02T08:00:00Z", "user_id": "", "query": "label backlog"}'],
                                    {}),
}


@pytest.mark.parametrize("case", list(FOUND))
def test_engines_agree_on_lines_found_by_the_generator(tmp_path: Path, case: str) -> None:
    lines, options = FOUND[case]
    log = tmp_path / "found.jsonl"
    log.write_text("\n".join([_ORDINARY, *lines]) + "\n")
    _same_import(tmp_path, log, options)


# A key twice whose value only shows in provenance: the python reader keeps the last
# value, DuckDB the first (checking each such key costs 0.1-0.3 CPU s per 5M lines). Pinned, so a
# change is seen: (line, the candidate's provenance key, python's, DuckDB's).
KEY_TWICE = {
    "time": ('{"query": "label backlog", "timestamp": "2026-10-02T08:00:00Z", "timestamp": "2026-10-05T08:00:00Z"}',
             "last_seen", "2026-10-05T08:00:00Z", "2026-10-02T08:00:00Z"),
    "user": ('{"query": "label backlog", "user_id": "u1", "user_id": "u3"}', "users", 1, 2),
    "result count": ('{"query": "label backlog", "result_count": 3, "result_count": 0}',
                     "zero_result_searches", 1, None),
    "latency": ('{"query": "label backlog", "latency_ms": 10, "latency_ms": 20}', "latency_ms_mean", 20.0, 15.0),
}


@pytest.mark.parametrize("case", list(KEY_TWICE))
def test_a_key_twice_that_only_provenance_shows_is_read_last_by_python_first_by_duckdb(tmp_path: Path,
                                                                                        case: str) -> None:
    line, key, python, duckdb = KEY_TWICE[case]
    log = tmp_path / "twice.jsonl"
    log.write_text("\n".join([_ORDINARY, '{"query": "label backlog", "user_id": "u3", "latency_ms": 20}', line]) + "\n")
    shown = {}
    for engine in ("python", "duckdb"):
        _, _, candidates = _import(tmp_path / engine, engine, log, {})
        shown[engine] = {c[0]: c[3] for c in candidates}["label backlog"].get(key)
    assert shown == {"python": python, "duckdb": duckdb}


# Found by the generator in both engines alike (the python reader's own handling)
def test_a_count_too_big_to_store_is_a_rejected_line(tmp_path: Path) -> None:
    log = tmp_path / "counts.jsonl"
    log.write_text(f'{{"query": "huge count question", "n": {2**63}}}\n{{"query": "label backlog", "n": 1}}\n')
    _, summary, candidates = _import(tmp_path, "python", log, {"count_field": "n"})
    assert summary["rejected"] == 1 and [c[0] for c in candidates] == ["label backlog"]


def test_a_latency_that_is_no_number_gives_no_mean(tmp_path: Path) -> None:
    log = tmp_path / "latency.jsonl"
    log.write_text('{"query": "label backlog", "latency_ms": "NaN"}\n'
                   '{"query": "dhl cutoff time", "latency_ms": "inf"}\n')
    _, _, candidates = _import(tmp_path, "python", log, {})
    for _, _, _, provenance, _ in candidates:
        json.dumps(provenance, allow_nan=False)  # NaN and Infinity are no JSON
