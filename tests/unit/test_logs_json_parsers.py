"""The standard-library JSON parser, held to what orjson accepts, so a log reads the same
on a plain install (no orjson) as with the optional speed-up."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from curator.logs.jsonl import loads_record, strict_loads, without_trailing_commas

REFUSED = [
    b'{"latency_ms": NaN}',
    b'{"latency_ms": -Infinity}',
    b'{"latency_ms": 1e400}',
    b'{"query": "lone \\ud800 surrogate"}',
    b'{"query": "lone \\uDC00 low surrogate"}',
    b'{"query": "trailing comma",}',
    b'{"query": "caf\xe9"}',
    b'{"query": "x", "note": ' + b"[" * 1100 + b"]" * 1100 + b"}",  # deeper than either parser goes
]

ACCEPTED = {
    b'{"query": "caf\\u00e9 \\ud83d\\ude00"}': {"query": "caf\u00e9 \U0001f600"},
    b'{"query": "first", "query": "second"}': {"query": "second"},
    b'{"n": 99999999999999999999999}': {"n": 1e23},
    b'{"n": 18446744073709551615, "m": -9223372036854775808}': {"n": 2**64 - 1, "m": -(2**63)},
    b'{"x": 1.5e3}': {"x": 1500.0},
}


@pytest.mark.parametrize("line", REFUSED)
def test_lines_orjson_refuses_are_broken_json_to_the_fallback_too(line: bytes) -> None:
    with pytest.raises(ValueError):
        strict_loads(line)


@pytest.mark.parametrize("line,value", ACCEPTED.items())
def test_lines_orjson_reads_read_the_same(line: bytes, value: object) -> None:
    assert strict_loads(line) == value


def test_the_fallback_agrees_with_orjson_line_for_line() -> None:
    orjson = pytest.importorskip("orjson")
    for line in [*REFUSED, *ACCEPTED]:
        try:
            expected = orjson.loads(line)
        except ValueError:
            expected = ValueError
        try:
            got = strict_loads(line)
        except ValueError:
            got = ValueError
        assert got == expected, line


@given(st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=10,
))
def test_any_json_value_round_trips(value: object) -> None:
    for ensure_ascii in (True, False):
        line = json.dumps(value, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")
        if any(0xD800 <= ord(c) <= 0xDFFF for c in json.dumps(value, ensure_ascii=False)):
            with pytest.raises(ValueError):
                strict_loads(line)
        else:
            assert strict_loads(line) == value


@pytest.mark.parametrize("line,value", [
    (b'{"query": "x", "note": 1e400}', {"query": "x", "note": float("inf")}),
    (b'{"query": "x", "note": 1' + b"0" * 400 + b"}", {"query": "x", "note": float("inf")}),
    (b'{"query": "x", "note": 2}', {"query": "x", "note": 2}),
])
def test_a_log_line_takes_numbers_past_a_double_as_infinity(line: bytes, value: object) -> None:
    """Valid JSON (RFC 8259 sets no range) that orjson and the strict fallback refuse:
    a field curator does not read cannot make the line broken."""
    assert loads_record(line) == value


@pytest.mark.parametrize("line", [line for line in REFUSED if b"1e400" not in line and b'",}' not in line])
def test_a_log_line_is_still_broken_for_everything_else(line: bytes) -> None:
    with pytest.raises(ValueError):
        loads_record(line)


# What DuckDB's parser takes (yyjson with trailing commas allowed) and what it refuses
TRAILING_COMMAS = [
    "[1,]", "[,]", "[1,,]", '{"a":1,}', "{,}", '{"a":1 , }', '{"q":"x","h":[1,2,],}', '{"a":1,,}', '{"a":,}',
    "[1,\n]", '{"a":[1,] ,}', '{"a":1}, ', '{"a":1,}x', '{"a":"x,]",}', '{"a":"x\\",}"}', '{"a":"x,}',
    '{"a":1,\x0c}', '{"a":{},}', '{"a":[],}', '{"a":"",}', '{"a":true,}', '{"a":null ,\r\n}', "[1,]]",
    '{"a":[1,}', '{"a":"caf\u00e9",}', '{"a":"\\"",}',
]


@pytest.mark.parametrize("line", TRAILING_COMMAS)
def test_a_log_line_takes_a_trailing_comma_as_duckdb_does(line: str) -> None:
    """One comma after the last value of an object or array is read (as DuckDB reads
    it, so neither engine has to look for one); any other stray comma is broken JSON."""
    import duckdb

    with duckdb.connect() as con:
        expected = con.execute("SELECT try(json_extract(?, '$'))::VARCHAR", [line]).fetchone()[0]
    for data in (line, line.encode()):
        try:
            got = loads_record(data)
        except ValueError:
            got = None
        assert got == (None if expected is None else json.loads(expected)), data


def test_a_comma_inside_a_string_is_kept() -> None:
    assert loads_record('{"q": "a ,}", "h": ["b ,]",],}') == {"q": "a ,}", "h": ["b ,]"]}
    assert without_trailing_commas('{"q": "a ,}"}') is None


@pytest.mark.parametrize("brackets", ["[]", "{}"])
def test_nesting_past_max_depth_is_broken_json_with_every_parser(brackets: str) -> None:
    """The limit is curator's own (MAX_DEPTH), not the interpreter's or orjson's: the
    same on every Python, with or without orjson, in the fast path too."""
    from curator.logs.aggregate import Aggregate
    from curator.logs.fields import Fields
    from curator.logs.jsonl import MAX_DEPTH, JsonlHandler

    def nested(depth: int) -> bytes:
        opening, closing = ("[", "]") if brackets == "[]" else ('{"a": ', "}")
        return ('{"query": "x", "note": ' + opening * (depth - 1) + "1" + closing * (depth - 1) + "}").encode()

    deepest, too_deep = nested(MAX_DEPTH), nested(MAX_DEPTH + 1)
    assert loads_record(deepest)["query"] == strict_loads(deepest)["query"] == "x"
    for parse in (loads_record, strict_loads):
        with pytest.raises(ValueError):
            parse(too_deep)
    handler = JsonlHandler(Fields(query="query"))
    agg = Aggregate()
    handler.process(deepest + b"\n" + too_deep + b"\n", 1, agg)
    assert agg.parsed == 1 and {r: x.lines for r, x in agg.rejected.items()} == {"broken JSON": [2]}
