"""From counted exact queries to distinct normalised ones: each exact query is
whitespace-collapsed and redacted, then grouped with the others of its normalised
form, and the normalised queries are filtered (length, noise). The work is once per
distinct query, not once per line."""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

from curator.logs.aggregate import USERS_CAP, Aggregate
from curator.logs.normalise import normalize_query
from curator.logs.redact import Redactor

# Could redaction change this text? A superset of what any built-in redaction pattern
# can match (tests check this), in two searches whose branches each begin with a fixed
# character, so the regex engine tries them only where one stands (a single search of
# all branches, many beginning with a class, cost three times as much):
# - words and signs: e-mail @, `key: value` and `a=b`, +44 / (020 phones, MAC 0a-1b-,
#   and the words and prefixes of tokens, keys and the other kinds (`api` alone, common
#   in queries, is not one; `key` only before a long value or as `api_key`);
# - numbers: 1-2 / 1.2 / 20 79 (phones, IPv4, SSN), ten digits, 13+ digits (cards), and
#   two letters before 2 digits and 8 more characters (IBAN) or 6 digits (NI number).
# A name needs a capital after its cue word, so it has its own case-sensitive search.
# `CARRIER-E1042` and `error 404 page` match none. They keep the patterns off most queries.
_WORDS_AND_SIGNS = (r"@|:|=|\+\d|\(\d|-[0-9a-f]{2}-|-----begin|mii[a-z0-9+/]{60}|hooks\.slack|/api/webhooks|eyj|bearer"
                    r"|token|secret|passw|pwd|api[_-]?key|key>?\s*[a-z0-9+/=_-]{20}|basic\s|sid=|session|npm_|passport"
                    r"|born|dob|d\.o\.b|birth|sk[-_]|pk[-_]|rk[-_]|gh[pousr]_|xox|aiza|akia|asia")
_NUMBERS = (r"\d(?:[ .-]\d|\d{9}|(?:[ -]?\d){12}"
            r"|(?<=[a-z]{2}\d)\d ?[a-z0-9]{4} ?[a-z0-9]{4}|(?<=[a-z]{2}\d)\d ?\d\d ?\d\d|(?<=[a-z]{2} \d)\d ?\d\d ?\d\d)")
_MAYBE_PERSONAL = (re.compile(_WORDS_AND_SIGNS, re.I), re.compile(_NUMBERS, re.I))
_MAYBE_PERSONAL_LOWER = (re.compile(_WORDS_AND_SIGNS), re.compile(_NUMBERS))  # for lower-cased ASCII: 3x faster
# Where a match of _WORDS_AND_SIGNS in lower-cased ASCII can begin: its first one to four
# characters (bulk.Prefixes; tests check every match begins so). A search of the joined
# queries for these is table look-ups in numpy, ten times faster than the alternation.
_HEX = "0123456789abcdef"
_WORD_PREFIXES = [
    "@", ":", "=", *(f"{sign}{d}" for sign in "+(" for d in "0123456789"),
    *(f"-{x}{y}-" for x in _HEX for y in _HEX), "----", "mii", "hook", "/api", "eyj", "bear", "toke", "secr",
    "pass", "pwd", "api_", "api-", "apik", "key", "basi", "sid=", "sess", "npm_", "born", "dob", "d.o.", "birt",
    "sk-", "sk_", "pk-", "pk_", "rk-", "rk_", *(f"gh{x}_" for x in "pousr"), "xox", "aiza", "akia", "asia",
    # and of _NUMBERS: a digit, then a digit or one of ` .-` and a digit
    *(f"{a}{b}" for a in "0123456789" for b in "0123456789"),
    *(f"{a}{sign}{b}" for a in "0123456789" for sign in " .-" for b in "0123456789"),
]
# _NAME_CUE needs an upper-case letter and one of its cue words (lower-cased: a superset)
_NAME_PREFIXES = ["for", "from", "cust", "user", "clie"]
# the built-in noise: a URL at the start (http, www. in any case), a repeated character
# (the first two alike), a probe (`<script`, `union`, a quote)
_URL_STARTS = ["http", "www."]
_PROBE_PREFIXES = ["<scr", "unio", "'"]
# each branch begins with a letter (no \b): a superset of the name rule's cue, searched fast
_NAME_CUE = re.compile(r"(?:for|For|from|From|customer|Customer|user|User|client|Client)\s+[A-Z]")
# built-in noise: a pasted URL or one character repeated (aaaaaa), and injection probes
_URL_OR_REPEATED = re.compile(r"(?:(?:https?://|www\.)\S*|(.)\1{3,})$", re.I)
_PROBE = re.compile(r"(?=[<u'])(?:<script|\bunion\s+(?:all\s+)?select\b|'\s*or\s+'?1'?\s*=\s*'?1)", re.I)
_PLACEHOLDER = re.compile(r"<[a-z_]+>")  # in a normalised (lower-case) query
_ALNUM = re.compile(r"[^\W_]")
NOISE = "noise (URL, probe or repeated character)"
# Characters a query never means, stored or printed: control codes (C0 other than the
# whitespace `str.split` already takes, DEL, C1; an escape sequence in a log would reach
# the terminal) become a space; invisible format characters (bidi overrides and marks,
# zero-width space, word joiner, byte-order mark) are dropped. Joiners (U+200C, U+200D)
# stay: Persian, Indic scripts and emoji need them.
_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x9f]")
_INVISIBLE = re.compile(r"[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
JOIN_CHUNK = 250_000  # queries joined into one text at a time (bulk.Joined)


def maybe_personal(text: str) -> bool:
    """Could redaction change this (whitespace-collapsed) text? (For ASCII, lower() is
    exactly what re.I does.)"""
    if _NAME_CUE.search(text):
        return True
    if text.isascii():
        text = text.lower()
        words, numbers = _MAYBE_PERSONAL_LOWER
    else:
        words, numbers = _MAYBE_PERSONAL
    return words.search(text) is not None or numbers.search(text) is not None


class Group:
    """One normalised (and redacted) query with everything its exact forms carried.
    Built only for the clusters the sampler reaches (see `Grouped.group`)."""

    __slots__ = ("surfaces", "raws", "count", "first", "last", "users", "hits", "clicks", "zero_results",
                 "latency", "top")

    def __init__(self, top: str) -> None:
        self.surfaces: dict[str, int] = {}
        self.raws: list[str] = []  # the exact queries (as logged) grouped here
        self.count = 0
        self.first: str | None = None
        self.last: str | None = None
        self.users: set[Any] | frozenset[Any] | None = None  # names, or DuckDB's hashes of them
        self.hits: Counter[str] | None = None
        self.clicks: Counter[str] | None = None
        self.zero_results = 0
        self.latency: list[float] | None = None  # [sum, lines]
        self.top = top  # most frequent surface form

    def add(self, agg: Aggregate, raw: str, text: str, n: int) -> None:
        """Fold in exact query `raw` (redacted and whitespace-collapsed: `text`), asked `n` times."""
        self.surfaces[text] = self.surfaces.get(text, 0) + n
        self.raws.append(raw)
        self.count += n
        self.add_users(agg.users.get(raw))
        lat = agg.latency.get(raw)
        self.add_details(agg.first.get(raw), agg.last.get(raw), agg.zero_results.get(raw, 0),
                         lat[0] if lat else 0.0, int(lat[1]) if lat else 0)

    def add_details(self, first: str | None, last: str | None, zero: int, lat_sum: float, lat_n: int) -> None:
        """Fold in one exact query's first and last seen, zero-result count and latency
        (sum over `lat_n` lines); from the Aggregate, or looked up later (duck_details)."""
        if first and (self.first is None or first < self.first):
            self.first = first
        if last and (self.last is None or last > self.last):
            self.last = last
        self.zero_results += zero
        if lat_n:
            self.latency = self.latency or [0.0, 0]
            self.latency[0] += lat_sum
            self.latency[1] += lat_n

    def add_ids(self, hits: Counter[str] | None, clicks: Counter[str] | None) -> None:
        """Fold in the hits and clicks of one of its exact queries (see `look_up_ids`)."""
        if hits is not None:
            self.hits = self.hits or Counter()
            self.hits.update(hits)
        if clicks is not None:
            self.clicks = self.clicks or Counter()
            self.clicks.update(clicks)

    def add_users(self, users: set[Any] | frozenset[Any] | None) -> None:
        if not users:
            return
        if not self.users:
            self.users = users  # shared, not copied: most groups have one form
        elif len(self.users) < USERS_CAP:
            both = self.users | users
            self.users = both if len(both) <= USERS_CAP else set(list(both)[:USERS_CAP])


class Grouped:
    """The distinct normalised queries of an import as parallel lists, in the order the
    aggregate first met them. An object per distinct query would cost more than all the
    rest of the work, so `Group`s are built only for the clusters the sampler reaches."""

    def __init__(self, agg: Aggregate, raws: list[str], texts: list[str], weights: list[int]) -> None:
        self.agg, self.raws, self.texts, self.weights = agg, raws, texts, weights
        self.norms: list[str] = []
        self.counts: list[int] = []  # times asked, per norm
        self.surfaces: list[str] = []  # most frequent surface form, per norm
        self.first: list[int] | range = []  # per norm: its first exact query (index into raws)
        self.more: dict[int, list[int]] = {}  # per norm with several exact queries: all of them, in order

    def forms(self, j: int) -> list[int]:
        """The exact queries (indices into raws) of norm `j`, in first-seen order."""
        return self.more.get(j) or [self.first[j]]

    def group(self, j: int) -> Group:
        g = Group(self.surfaces[j])
        for k in self.forms(j):
            g.add(self.agg, self.raws[k], self.texts[k], self.weights[k])
        return g


def group(agg: Aggregate, redactor: Redactor, filtered: dict[str, int]) -> Grouped:
    """The exact queries of `agg` cleaned (see `cleaned`) and grouped by normalised form;
    empty ones are counted in `filtered` and left out. The counts move from `agg` to the
    Grouped (`agg.counts` is left empty; its other tables stay, for the groups)."""
    import numpy as np  # here: importing the pipeline stays free of numpy

    raws = list(agg.counts)
    weights = list(agg.counts.values())
    agg.counts.clear()  # the lists hold them now: a dict of every exact query is a long tail's biggest thing
    texts, norms, changed = _cleaned(raws, weights, redactor)
    grouped = Grouped(agg, raws, texts, weights)
    empty = [k for k in np.flatnonzero(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) == 0).tolist()]
    if empty:
        bump(filtered, "empty query", sum(weights[k] for k in empty))
    if _own_norms(raws, texts, norms, changed):  # the usual case: every exact query is its own norm
        if not empty:
            grouped.norms, grouped.first, grouped.counts, grouped.surfaces = norms, range(len(norms)), weights, texts
            return grouped
        keep = [k for k, n in enumerate(norms) if n]
        grouped.norms = [norms[k] for k in keep]
        grouped.first = keep
        grouped.counts = [weights[k] for k in keep]
        grouped.surfaces = [texts[k] for k in keep]
        return grouped
    distinct = dict.fromkeys(norms)  # norms in first-seen order (C speed)
    distinct.pop("", None)
    at = {norm: j for j, norm in enumerate(distinct)}
    grouped.norms = list(distinct)
    grouped.first = [-1] * len(at)
    grouped.counts = [0] * len(at)
    more = grouped.more
    for k, norm in enumerate(norms):
        if not norm:
            continue
        j = at[norm]
        if grouped.first[j] < 0:
            grouped.first[j] = k
            grouped.counts[j] = weights[k]
        else:
            more.setdefault(j, [grouped.first[j]]).append(k)
    grouped.surfaces = [texts[k] for k in grouped.first]
    for j, ks in more.items():
        surfaces: dict[str, int] = {}
        for k in ks:
            surfaces[texts[k]] = surfaces.get(texts[k], 0) + weights[k]
        grouped.counts[j] = sum(surfaces.values())
        grouped.surfaces[j] = max((n, text) for text, n in surfaces.items())[1]  # most frequent, or greater
    return grouped


@functools.cache
def _prefixes(which: str) -> Any:
    from curator.logs.bulk import Prefixes

    return Prefixes({"words": _WORD_PREFIXES, "names": _NAME_PREFIXES, "probes": _PROBE_PREFIXES}[which])


def _own_norms(raws: list[str], texts: list[str], norms: list[str], changed: list[int] | None) -> bool:
    """Is every non-empty norm its own, no other exact query's (and "" only where the
    text is empty)? The `raws` are distinct and each norm is its raw but at `changed`
    (None: anywhere), so only those need looking at: one that became another raw, or
    the norm of another changed one, is not its own."""
    if changed is None:
        distinct = dict.fromkeys(norms)
        distinct.pop("", None)
        return len(distinct) + sum(1 for text in texts if not text) == len(norms)
    new: set[str] = set()  # the changed norms (a set of a few, not of every raw)
    for k in changed:
        norm = norms[k]
        if norm == raws[k]:
            continue
        if not norm:
            if texts[k]:
                return False
            continue
        if norm in new:  # another changed query's norm
            return False
        new.add(norm)
    return not new or new.isdisjoint(raws)  # or another exact query as it is


def cleaned(raws: list[str], weights: list[int], redactor: Redactor,
            chunk: int = JOIN_CHUNK) -> tuple[list[str], list[str]]:
    """Each exact query tidied (`tidy`) and redacted (an empty one stays empty), and
    its normalised form ("" for an empty one); the redactions are counted in `redactor`,
    by `weights` (log lines). The screen (`maybe_personal`) and the tidy and lower-case
    checks run over all queries at once (bulk.Joined); only the queries they mark, and
    those the join cannot hold as they are, are looked at one by one."""
    texts, norms, _changed = _cleaned(raws, weights, redactor, chunk)
    return texts, norms


def _cleaned(raws: list[str], weights: list[int], redactor: Redactor,
             chunk: int = JOIN_CHUNK) -> tuple[list[str], list[str], list[int] | None]:
    """`cleaned`, and the queries whose text or norm may differ from the query (None: any)."""
    import numpy as np

    from curator.logs.bulk import UPPER, Joined

    if redactor.extra or redactor.names:  # user patterns: every query
        texts = [redactor.redact(tidy(raw), weight) for raw, weight in zip(raws, weights, strict=True)]
        return texts, [_norm(text) for text in texts], None
    upper = np.zeros(len(raws), dtype=bool)
    one_by_one = np.zeros(len(raws), dtype=bool)
    for at in _chunks(len(raws), chunk):  # the join and its per-character arrays a chunk at a time
        joined = Joined(raws[at])
        upper[at] = joined.with_codes(UPPER)
        one_by_one[at] = ~joined.plain | (joined.lengths == 0) | joined.untidy()
        one_by_one[at] |= joined.with_prefixes(_prefixes("words"), lowered=True)
        one_by_one[at] |= upper[at] & joined.with_prefixes(_prefixes("names"), lowered=True)
        del joined
    texts = raws  # the very list until a text differs: most queries are their own text
    norms = list(raws)  # and their own norm
    for k in np.flatnonzero(upper & ~one_by_one).tolist():
        norms[k] = raws[k].lower()
    for k in np.flatnonzero(one_by_one).tolist():
        raw = raws[k]
        text = tidy(raw)
        if maybe_personal(text):
            text = redactor.redact(text, weights[k])
        if text == raw:  # the raw's own string, not an equal copy (a screen marks many that stay as they are)
            text = raw
        else:
            if texts is raws:
                texts = list(raws)
            texts[k] = text
        norm = _norm(text)
        norms[k] = text if norm == text else norm
    return texts, norms, np.flatnonzero(upper | one_by_one).tolist()


def tidy(raw: str) -> str:
    """`raw` with single spaces between words, no control codes and no invisible
    format characters (see _CONTROLS): what a query is stored and shown as."""
    text = " ".join(raw.split())
    if text.isprintable():  # the usual case: nothing more to do
        return text
    return " ".join(_INVISIBLE.sub("", _CONTROLS.sub(" ", text)).split())


def _chunks(n: int, chunk: int) -> list[slice]:
    """Slices of `n` strings, `chunk` at a time: a `Joined` of millions of queries (a
    long tail's) holds a few arrays of a byte per character, so it is made a chunk at a
    time. A screen marks a string for what it holds alone, so chunks mark the same."""
    return [slice(start, start + chunk) for start in range(0, n, chunk)]


def _norm(text: str) -> str:
    # `text` is stripped with single spaces: for ASCII, NFKC is the identity and
    # casefold is lower(), so this equals normalize_query(text), much faster
    if not text:
        return ""
    return text.lower() if text.isascii() else normalize_query(text)




def kept(grouped: Grouped, min_length: int, max_length: int, noise: list[re.Pattern[str]],
         filtered: dict[str, int], chunk: int = JOIN_CHUNK) -> Any:
    """A mask of the norms (a numpy array) that pass the length and noise filters; the others are
    counted in `filtered` by reason (the last rule a norm breaks). The rules are
    screened over all norms at once; the norms a screen marks are judged one by one."""
    import numpy as np

    from curator.logs.bulk import ALNUM, Joined

    norms, surfaces = grouped.norms, grouped.surfaces
    lengths = np.fromiter(map(len, norms), dtype=np.int64, count=len(norms))
    doubtful = (lengths < min_length) | (lengths > max_length)
    if noise:
        doubtful[:] = True
    else:
        for at in _chunks(len(norms), chunk):
            joined = Joined(surfaces[at])
            doubtful[at] |= ~joined.plain | joined.opening(_URL_STARTS) | joined.repeating()
            doubtful[at] |= joined.with_prefixes(_prefixes("probes"), lowered=True)
            joined = Joined(norms[at])
            doubtful[at] |= ~joined.plain | joined.starting(~ALNUM)
            del joined
    keep = ~doubtful
    for at in _chunks(len(norms), chunk):  # a chunk at a time: with noise patterns every norm is doubtful
        for j in (np.flatnonzero(doubtful[at]) + at.start).tolist():
            reason = _reason(norms[j], surfaces[j], min_length, max_length, noise)
            if reason is None:
                keep[j] = True
            else:
                bump(filtered, reason)
    return keep


def _reason(norm: str, surface: str, min_length: int, max_length: int, noise: list[re.Pattern[str]]) -> str | None:
    """Why a norm is filtered out (the last rule it breaks), or None."""
    reason = None
    if _URL_OR_REPEATED.match(surface) or _PROBE.search(surface):
        reason = NOISE
    for pattern in noise:
        if pattern.search(surface) or pattern.search(norm):
            reason = "noise pattern"
    if not has_words(norm):
        reason = "noise (no words left)"
    if len(norm) > max_length:
        reason = f"longer than {max_length} characters"
    if len(norm) < min_length:
        reason = f"shorter than {min_length} characters"
    return reason


def has_words(norm: str) -> bool:
    """Is there a letter or digit in `norm` that is not part of a placeholder?"""
    if norm[:1].isalnum():  # most norms start with one: a word no placeholder can hide
        return True
    return _ALNUM.search(_PLACEHOLDER.sub("", norm) if "<" in norm else norm) is not None


def bump(table: dict[str, int], key: str, n: int = 1) -> None:
    table[key] = table.get(key, 0) + n
