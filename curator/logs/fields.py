"""Which field of a log record holds what, and how to guess it from the first records."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

QUERY_FIELDS = ("query", "q", "search", "user_query", "search_query", "query_text", "text", "keywords", "term",
                # analytics exports: Google Analytics' search terms, Search Console's queries,
                # Bing's and Matomo's keywords, Adobe's internal search terms
                "search_term", "search term", "search terms", "searchterm", "top queries", "keyword",
                "search keyword", "internal search term", "internal search terms")
TIME_FIELDS = ("timestamp", "@timestamp", "time", "ts", "datetime", "date", "created_at", "line_time")
USER_FIELDS = ("user_id", "user", "client_id", "uid", "visitor_id", "session_id", "session")
HITS_FIELDS = ("hits", "hit_ids", "result_ids", "returned_ids", "doc_ids", "query_response_hit_ids")
CLICK_FIELDS = ("clicked", "clicks", "clicked_ids", "click_ids")
RESULTS_FIELDS = ("result_count", "results_count", "num_results", "total_hits", "hits_count")
LATENCY_FIELDS = ("latency_ms", "latency", "took_ms", "took", "duration_ms")
URL_PARAMS = ("q", "query", "search", "s", "term", "text", "keywords")
# The largest count one line may carry (pre-aggregated input): past it a count is no
# count, and the totals stay within SQLite's 64-bit integers
MAX_COUNT = 10**15 - 1
COUNT_REASON = "{!r} is not a whole number up to 10^15"

GUESSES = {
    "query": QUERY_FIELDS,
    "time": TIME_FIELDS,
    "user": USER_FIELDS,
    "hits": HITS_FIELDS,
    "clicks": CLICK_FIELDS,
    "results": RESULTS_FIELDS,
    "latency": LATENCY_FIELDS,
}

# OpenSearch User Behavior Insights query records (the `ubi_queries` index).
UBI = {"query": "user_query", "time": "timestamp", "user": "client_id", "hits": "query_response_hit_ids"}


@dataclass(frozen=True)
class Fields:
    """Field names (JSON: dotted paths such as `request.params.q`; CSV: column names)."""

    query: str | None = None
    count: str | None = None  # pre-aggregated input: how many times the query was asked
    time: str | None = None
    user: str | None = None
    hits: str | None = None
    clicks: str | None = None
    results: str | None = None
    latency: str | None = None

    def given(self) -> dict[str, str]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}

    def merged(self, guessed: dict[str, str]) -> Fields:
        """These fields, with guesses filling only the ones not given."""
        extra = {k: v for k, v in guessed.items() if getattr(self, k) is None}
        return replace(self, **extra)


def get_path(record: Any, path: str) -> Any:
    """`record["a"]["b"]` for `a.b`; a key that itself contains dots wins."""
    if isinstance(record, dict) and path in record:
        return record[path]
    node = record
    for part in path.split("."):
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
        if node is None:
            return None
    return node


def guess_fields(records: list[dict[str, Any]], given: Fields) -> Fields:
    """Fill the fields not given with the first conventional name the records use."""
    if given.query is None and any("user_query" in r for r in records):
        given = given.merged(UBI)
    guessed: dict[str, str] = {}
    for role, names in GUESSES.items():
        for name in names:
            values = [r.get(name) for r in records if isinstance(r, dict)]
            if role == "query":
                ok = any(isinstance(v, str) for v in values)
            else:
                ok = any(v is not None for v in values)
            if ok:
                guessed[role] = name
                break
    return given.merged(guessed)


def id_list(value: Any) -> list[str]:
    """Hit or click ids as strings: a list of ids, of `{"id": ...}` objects, or a
    comma-separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, dict):
        value = [value]
    out = []
    if isinstance(value, list):
        for item in value:
            if isinstance(item, str | int):
                out.append(str(item))
            elif isinstance(item, dict):
                for key in ("id", "_id", "doc_id", "passage_id"):
                    if item.get(key) is not None:
                        out.append(str(item[key]))
                        break
    return out


def as_number(value: Any) -> float | None:
    """A finite number from a number or its text, else None (`"NaN"`, `"inf"`, `true`)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def as_count(value: Any) -> int | None:
    """A line's count (pre-aggregated input): a whole number from 0 to MAX_COUNT, as a
    number or its text, else None."""
    number = as_number(value)
    if number is None or number < 0 or number != int(number) or number > MAX_COUNT:
        return None
    return int(number)
