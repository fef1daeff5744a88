"""`import_logs`: from search-log files to de-duplicated, privacy-safe review candidates.

Read (count per exact query) -> redact -> normalise and group -> filter -> cluster
near-duplicates -> drop what is already queued or in a set -> sample to the budget ->
queue, with provenance and suggested passages. Normalising, redaction and clustering
run once per distinct query, not once per line.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from dataclasses import fields as dataclass_fields
from itertools import compress
from operator import itemgetter, ne, not_
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process

from curator._process import paused_gc
from curator.errors import InputError
from curator.logs.aggregate import USERS_CAP, Aggregate, iso_z, parse_time
from curator.logs.cluster import PARALLEL_MIN, cluster
from curator.logs.fields import Fields
from curator.logs.helper import helper as start_helper
from curator.logs.imports import KnownImports, quick_key
from curator.logs.imports import record as record_imports
from curator.logs.lines import MAX_LINE_BYTES, Window
from curator.logs.normalise import (
    compare_keys,
    digit_signatures,
    looks_like_identifier,
    normalize_query,
)
from curator.logs.reading import (
    ENGINES,
    FORMATS,
    FileRead,
    Progress,
    Source,
    blank_lines,
    expand,
    read_source,
)
from curator.logs.redact import Redactor
from curator.logs.sample import SAMPLERS, sample_order
from curator.models import CandidateIn, Suggestion
from curator.text import sha256_hex

# Cheap test for "could this contain personal data at all": most queries cannot, and
# skipping them keeps redaction off the hot path.
# A superset of what any built-in redaction pattern can match (tests check this):
# e-mail @, phone +1 / (0 / 1-2 / 20 79, IPv4 1.2, IPv6 hex:hex or ::, 13+ digits (cards),
# and the prefixes of tokens and keys (`api` alone, common in queries, is not one).
# `CARRIER-E1042` does not trigger it.
_PERSONAL_SIGNS = r"@|\+\d|\(\d|\d[ .-]\d|[0-9a-f]:[0-9a-f]|::|(?:\d[ -]?){12}\d"
_PERSONAL_WORDS = r"eyj|bearer|token|secret|passw|pwd|api[-_]?key|sk[-_]|pk[-_]|rk[-_]|gh[pousr]_|xox|aiza|akia|asia"
_PERSONAL = f"{_PERSONAL_SIGNS}|{_PERSONAL_WORDS}"
_MAYBE_PERSONAL = re.compile(_PERSONAL, re.I)
# For DuckDB's read-back (RE2, over each distinct query's JSON text, lower-cased): a
# query it does not match cannot be one `_maybe_personal` lets through once cleaned.
# Its text is then printable ASCII with no escape, so it is the JSON text without its
# quotes (which no pattern holds); without two spaces in a row, cleaning only strips
# its ends, which adds no match; for ASCII, lower() is what re.I does, and RE2's \d is
# Python's. Anything else (an escape, a control or non-ASCII character, two spaces) is
# matched, and left to the Python check.
SCREEN = rf"[^\x20-\x7e]|\\|  |{_PERSONAL}"
_MAYBE_PERSONAL_LOWER = re.compile(_PERSONAL)  # for lower-cased ASCII: 8x faster than re.I
_SIGN = re.compile(r"[@+(:\d]")  # where every one of _PERSONAL_SIGNS starts
_WORD = re.compile(_PERSONAL_WORDS)
# The signs again, for one scan over many texts: each sign starts with one of [@+(:\d],
# and a pattern that starts with a character set is scanned for it fast (an alternation is
# tried at every position: 4x slower)
_SIGNS = r"[@+(:\d](?:(?<=@)|(?<=\+)\d|(?<=\()\d|(?<=\d)[ .-]\d|(?<=[0-9a-f]:)[0-9a-f]|(?<=:):|(?<=\d)(?:[ -]?\d){12})"
_SIGNS_SCAN = re.compile(_SIGNS)
# Texts that are not ASCII get the same two scans after a fold that keeps their length:
# A-Z to a-z, and each other character that re.I (which _MAYBE_PERSONAL uses) takes for
# an ASCII letter (`ſ` for s, `K` for k) to that letter; every pattern character that
# cares about case is an ASCII letter. A search per text cost 7 µs (0.45 s for 62k
# queries), scans with re.I 0.37 s.
_A_LETTER = re.compile("[a-z]", re.I)
_LETTER = {letter: re.compile(letter, re.I) for letter in "abcdefghijklmnopqrstuvwxyz"}


def _maybe_personal(text: str) -> bool:
    """Could redaction change this text? (For ASCII, lower() is exactly what re.I does.)"""
    if text.isascii():
        lower = text.lower()
        # most queries have none of the signs, and the words alone are a faster search
        pattern = _MAYBE_PERSONAL_LOWER if _SIGN.search(lower) else _WORD
        return pattern.search(lower) is not None
    return _MAYBE_PERSONAL.search(text) is not None
# built-in noise: a pasted URL or one character repeated (aaaaaa), with .match (it fails
# at once on most queries; one pattern, one call per query), and injection probes, which
# only start at `<`, `u` or `'` (checked first: 30% faster than without; see _probes_at)
_URL_OR_REPEATED = re.compile(r"(?:(?:https?://|www\.)\S*|(.)\1{3,})$", re.I)
_PROBE = re.compile(r"(?=[<u'])(?:<script|\bunion\s+(?:all\s+)?select\b|'\s*or\s+'?1'?\s*=\s*'?1)", re.I)
_PLACEHOLDER = re.compile(r"<[a-z_]+>")  # in a normalised (lower-case) query
_ALNUM = re.compile(r"[^\W_]")
PREVIEW = 50
VARIANTS = 10
CHUNK = 2000  # clusters checked against the existing queries at a time
CELLS = 2_000_000  # scores per cdist call (16 MB)


@dataclass
class ImportOptions:
    """Everything `curator import-logs` can be told; None means the workspace config."""

    format: str = "auto"
    query_field: str | None = None
    count_field: str | None = None
    time_field: str | None = None
    user_field: str | None = None
    hits_field: str | None = None
    clicks_field: str | None = None
    results_field: str | None = None
    latency_field: str | None = None
    param: str | None = None
    since: str | None = None
    until: str | None = None
    similarity: float | None = None
    min_count: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    noise: list[str] = field(default_factory=list)
    redact: dict[str, str] = field(default_factory=dict)
    sample: str | None = None  # top | random | pps ([logs] sample, else top)
    limit: int | None = None  # 0: no limit ([logs] limit, else 500)
    seed: int | None = None
    dry_run: bool = False
    force: bool = False
    workers: int = 0  # 0: one per core, for big uncompressed files (python engine)
    engine: str | None = None  # auto | duckdb | python: who reads JSON Lines and Parquet ([logs] engine)
    max_line_bytes: int = MAX_LINE_BYTES


@dataclass
class FileSummary:
    path: str
    status: str  # imported | already imported | listed twice | empty
    format: str | None = None
    engine: str | None = None  # duckdb | python
    fingerprint: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    lines: int = 0
    parsed: int = 0
    rejected: dict[str, dict[str, Any]] = field(default_factory=dict)
    ignored: dict[str, int] = field(default_factory=dict)
    # already imported: the windows it was imported for ([since, until], None for an open end)
    windows: list[list[str | None]] | None = None


@dataclass
class ImportSummary:
    files: list[FileSummary] = field(default_factory=list)
    lines: int = 0
    parsed: int = 0
    rejected: int = 0
    distinct_queries: int = 0  # exact strings
    distinct_normalised: int = 0
    clusters: int = 0
    redactions: dict[str, int] = field(default_factory=dict)
    filtered: dict[str, int] = field(default_factory=dict)  # reason -> clusters (or queries)
    duplicates: dict[str, int] = field(default_factory=dict)  # candidate / case -> clusters
    eligible: int = 0
    sampled: int = 0
    queued: int = 0
    already_queued: int = 0
    candidate_ids: list[int] = field(default_factory=list)
    preview: list[dict[str, Any]] = field(default_factory=list)
    dry_run: bool = False
    sample: str = "top"
    limit: int = 0
    seed: int | None = None  # random and pps: the seed drawn with (--seed, or one chosen and shown)

    @property
    def partial(self) -> bool:
        """Some lines were rejected (the rest were imported)."""
        return self.rejected > 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def import_logs(
    ws,
    paths: list[str | Path],
    options: ImportOptions | None = None,
    progress: Progress | None = None,
    on_file: Any = None,
    on_stage: Any = None,
    helper: Any = None,
    **overrides: Any,
) -> ImportSummary:
    """Mine search-log files into review candidates of workspace `ws`.

    `paths`: files, globs, folders or `-` (stdin); gzip always, zstd when `zstandard`
    is installed. Options are an `ImportOptions` or its fields as keywords
    (`import_logs(ws, ["search.jsonl"], limit=100, sample="pps", seed=1)`).
    `progress(n)` is called with bytes read; `on_file(source, size)` before each file;
    `on_stage(text)` when the work after reading begins a stage (grouping, queueing).
    `helper`: a `curator.logs.helper.Helper` to share the per-query work with; by default
    one is started here where that is safe (see helper.py).
    Raises InputError for a missing/unreadable file or a query field that no line has;
    malformed lines are counted in the summary and skipped. Nothing personal is
    stored or returned: queries are redacted before they are grouped.
    """
    opts = options or ImportOptions()
    if overrides:
        opts = ImportOptions(**{**asdict(opts), **overrides})
    opts = _configured(opts, ws.config.logs)
    _check(opts)
    if opts.sample != "top" and opts.seed is None:  # drawn, and reported: any sample can be drawn again
        opts = replace(opts, seed=random.SystemRandom().randrange(1 << 31))
    cfg = ws.config.logs
    settings = _Settings(
        opts,
        {**cfg.redact_patterns, **opts.redact},
        [_compile(p, "noise pattern") for p in [*cfg.noise_patterns, *opts.noise]],
        _window(opts),
        Fields(
            opts.query_field, opts.count_field, opts.time_field, opts.user_field,
            opts.hits_field, opts.clicks_field, opts.results_field, opts.latency_field,
        ),
    )
    Redactor(settings.redact)  # a bad pattern fails before any file is read
    sources = expand(paths)
    if not sources:
        raise InputError(", ".join(map(str, paths)) or "(no paths)", "no log files to read")
    # a stream cannot be read again, so the import that might have to be (see _run) is
    # not tried with one
    overlap = all(source.path is not None for source in sources)
    with nullcontext(helper) if helper is not None else start_helper() as helper:
        callbacks = (progress, on_file, on_stage)
        try:
            return _run(ws, sources, settings, callbacks, helper, overlap=overlap)
        except _Again:  # rare: see _run
            return _run(ws, sources, settings, callbacks, helper, overlap=False)


@dataclass
class _Settings:
    opts: ImportOptions  # with the workspace's [logs] for what it left unset
    redact: dict[str, str]
    noise: list[re.Pattern[str]]
    window: Window
    fields: Fields


class _Again(Exception):
    """The last file's fingerprint, worked out while its queries were grouped, says the
    import must be done again the plain way (see `_run`)."""


def _run(ws, sources: list[Source], settings: _Settings, callbacks, helper, overlap: bool) -> ImportSummary:
    """The import. With `overlap`, the last file's fingerprint (a niced thread hashing
    it in the time DuckDB and Python leave) is only waited for after Python grouped and
    clustered its queries: 0.5 s on the 5M-line benchmark. If it then turns out that the
    file was imported before or listed twice under another name, or that DuckDB missed
    some of its lines, _Again: the caller runs the import again without overlap, which
    settles each file's fingerprint before using what was read."""
    opts, noise = settings.opts, settings.noise
    progress, on_file, on_stage = callbacks
    redactor = Redactor(settings.redact)
    summary = ImportSummary(dry_run=opts.dry_run, sample=opts.sample, limit=opts.limit,
                            seed=None if opts.sample == "top" else opts.seed)
    known = KnownImports(ws)
    total: Aggregate | None = None
    reads: list[FileRead] = []
    seen_fingerprints: set[str] = set()
    deferred: tuple[FileRead, FileSummary] | None = None
    hashed_users = False  # `total` holds users as DuckDB's hashes, not names
    for n, source in enumerate(sources):
        blank = blank_lines(source)
        if blank is not None:  # nothing to read, and no reason to stop the others
            summary.files.append(FileSummary(source.label, "empty", lines=blank,
                                             ignored={"blank line": blank} if blank else {}))
            summary.lines += blank
            continue
        unread = None if opts.force else known.imported_unread(quick_key(source.path), settings.window)
        if unread:
            summary.files.append(FileSummary(source.label, "already imported", fingerprint=unread[:16],
                                             windows=known.windows_of(unread)))
            continue
        if on_file:
            on_file(source, source.size())
        read = read_source(
            source, opts.format, settings.fields, opts.param, settings.window, opts.max_line_bytes, opts.workers,
            progress or (lambda _n: None), opts.engine, settle=not overlap or n < len(sources) - 1,
        )
        _require_found(read)
        fs = FileSummary(
            source.label, "imported", read.format, read.engine, read.fingerprint[:16], read.fields,
            read.agg.lines, read.agg.parsed,
            # copies: the first file's aggregate takes in the others' lines when they are merged
            {r: {"count": x.count, "lines": list(x.lines)} for r, x in sorted(read.agg.rejected.items())},
            dict(read.agg.ignored),
        )
        if read.pending:
            deferred = (read, fs)
        elif read.fingerprint in seen_fingerprints:
            fs.status = "listed twice"
        elif not opts.force and known.imported(read.fingerprint, settings.window):
            fs.status, fs.windows = "already imported", known.windows_of(read.fingerprint)
        if fs.status == "imported":
            if not read.pending:
                seen_fingerprints.add(read.fingerprint)
            reads.append(read)
            summary.lines += read.agg.lines
            summary.parsed += read.agg.parsed
            summary.rejected += sum(x.count for x in read.agg.rejected.values())
            # Users are names to the python reader and hashes of them to DuckDB: where
            # both kinds of file meet, the names are hashed, so a user counts once
            if read.engine == "duckdb" and total is not None and not hashed_users:
                _hash_user_names(total)
            elif read.engine != "duckdb" and hashed_users:
                _hash_user_names(read.agg)
            hashed_users = hashed_users or read.engine == "duckdb"
            if total is None:
                total = read.agg
            else:
                total.merge(read.agg)
        read.agg = Aggregate(lines=read.agg.lines, parsed=read.agg.parsed)  # free the copy
        summary.files.append(fs)

    stage = on_stage or (lambda _text: None)
    stage(f"Grouping and clustering {len(total.counts) if total else 0:,} distinct queries")
    with paused_gc():  # millions of small containers, no cycles: a third faster
        groups = _group(total or Aggregate(), redactor, summary, helper)
        del total
        summary.redactions = dict(redactor.counts)
        chosen = _choose(ws, groups, opts, noise, summary, helper)
        del groups  # all but the chosen groups: freed before DuckDB counts their users
    if deferred:
        _settle(*deferred, seen_fingerprints, None if opts.force else known, settings.window)
    stage(f"Queueing {len(chosen):,} clusters")
    group_of = {raw: g for item in chosen for g in item.groups for raw in g.raws}  # exact query -> its group
    _look_up_users(chosen, group_of, [r.users_of for r in reads if r.users_of])
    _look_up_details(group_of, [r.details_of for r in reads if r.details_of])

    files = [r.source.label for r in reads]
    import_id = sha256_hex("".join(sorted(r.fingerprint for r in reads)))[:12]
    candidates = _candidates(ws, chosen, files, import_id)
    summary.preview = [
        {
            "query": c.query,
            "count": c.count,
            "slice": c.suggested_slice,
            "variants": len(c.provenance.get("variants", [])),
            "suggestions": [s.id for s in c.suggestions],
        }
        for c in candidates[:PREVIEW]
    ]
    if not opts.dry_run:
        result = ws.add_candidates(candidates)
        summary.queued = len(result.added)
        summary.already_queued = len(result.existing)
        summary.candidate_ids = result.added
        record_imports(ws, reads, settings.window, summary.queued)
    return summary


def _hash_user_names(agg: Aggregate) -> None:
    from curator.logs import duck

    reader = duck.Reader(lambda _fraction: None)
    try:
        duck.hash_users(reader, agg)
    finally:
        reader.close()


def _settle(read: FileRead, fs: FileSummary, seen: set[str], known: KnownImports | None, window: Window) -> None:
    """The fingerprint of the file read last, now that its thread is done; _Again if
    the file should not have been counted (listed twice, or imported for this window
    before: `known`, None with --force), or DuckDB could not read all of it."""
    from curator.logs.duck import NotForDuckDB

    assert read.pending is not None
    try:
        fingerprint = read.pending()
    except NotForDuckDB:
        raise _Again from None
    if fingerprint in seen or (known is not None and known.imported(fingerprint, window)):
        raise _Again
    read.fingerprint, read.pending = fingerprint, None
    fs.fingerprint = fingerprint[:16]


def _choose(ws, grouped: _Grouped, opts: ImportOptions, noise, summary: ImportSummary,
            helper=None) -> list[_ClusterItem]:
    """Filter, cluster, drop what is already known and sample to the budget (`opts` as
    configured: no None left)."""
    similarity, min_count, min_length, max_length = opts.similarity, opts.min_count, opts.min_length, opts.max_length
    rows = _kept(grouped, min_length, max_length, noise, summary)
    norms = list(map(grouped.norms.__getitem__, rows))
    counts = list(map(grouped.counts.__getitem__, rows))
    clusters = cluster(norms, counts, similarity, helper)
    summary.clusters = len(clusters)
    totals = clusters.totals(counts)
    kept = list(compress(range(len(totals)), map(min_count.__le__, totals)))
    if len(kept) < len(clusters):
        _bump(summary.filtered, f"asked fewer than {min_count} times", len(clusters) - len(kept))
    summary.eligible = len(kept)

    dedupe = _Existing(ws, similarity)
    chosen: list[_ClusterItem] = []
    walk = list(map(kept.__getitem__, sample_order(list(map(totals.__getitem__, kept)), opts.sample, opts.seed)))
    # members and items only for the clusters the sampler reaches: one per cluster costs 40 MB at 150k
    for members, why in dedupe.along(walk, clusters.members, norms):
        if opts.limit and len(chosen) >= opts.limit:
            break
        if why:
            _bump(summary.duplicates, why)
            continue
        chosen.append(_ClusterItem([grouped.group(rows[i]) for i in members]))
    summary.sampled = len(chosen)
    return chosen


# ---- reading helpers -----------------------------------------------------------------


def _configured(opts: ImportOptions, cfg) -> ImportOptions:
    """`opts` with what it leaves unset (None) taken from the workspace's [logs], whose
    keys of the same names are their defaults (similarity, limits, sample, fields, ...)."""
    shared = {f.name for f in dataclass_fields(ImportOptions)} & set(type(cfg).model_fields)
    return replace(opts, **{k: getattr(cfg, k) for k in shared if getattr(opts, k) is None})


def _check(opts: ImportOptions) -> None:
    from curator.errors import CuratorError

    if opts.format not in FORMATS:
        raise CuratorError(f"unknown log format {opts.format!r}; expected one of {', '.join(FORMATS)}")
    if opts.engine not in ENGINES:
        raise CuratorError(f"unknown engine {opts.engine!r}; expected one of {', '.join(ENGINES)}")
    if opts.sample not in SAMPLERS:
        raise CuratorError(f"unknown sampler {opts.sample!r}; expected one of {', '.join(SAMPLERS)}")
    if opts.limit < 0:
        raise CuratorError("--limit must be 0 (no limit) or more")


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    from curator.errors import ConfigError

    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{what} {pattern!r} is not a valid regex: {exc}") from None


def _bound(value: str | None, option: str) -> str | None:
    if value is None:
        return None
    from curator.errors import CuratorError

    ts = parse_time(value)
    if ts is None:
        raise CuratorError(f"{option} {value!r} is not a date or time (expected e.g. 2026-10-01 or 2026-10-01T08:00:00Z)")
    return ts


def _window(opts: ImportOptions) -> Window:
    window = Window(_bound(opts.since, "--since"), _bound(opts.until, "--until"))
    if window.since and window.until and window.since >= window.until:
        from curator.errors import CuratorError

        raise CuratorError(f"--since {opts.since} is not before --until {opts.until}: no line could be imported "
                           "(--until is the first moment left out)")
    return window


def _require_found(read: FileRead) -> None:
    """InputError when no line had the query field (or an access log's parameter). A
    file whose every line falls outside --since/--until may have it: it is not asked."""
    agg = read.agg
    if agg.parsed or not agg.lines or agg.ignored.get("outside --since/--until"):
        return
    missing = [r for r in agg.rejected if r.startswith("no '")]
    if missing:
        raise InputError(
            read.source.label,
            f"none of its {agg.lines} lines has the query field {read.fields.get('query')!r}",
            hint="Name the query field with --query-field (dotted paths like request.params.q work).",
        )
    if agg.ignored.get("request without the search parameter"):
        raise InputError(
            read.source.label,
            f"no request has the {read.fields.get('param')!r} parameter",
            hint="Name the search parameter with --param NAME.",
        )


# ---- grouping, filtering ---------------------------------------------------------------


class _Group:
    """One normalised (and redacted) query with everything its exact forms carried.
    Built only for the clusters the sampler reaches (see `_Grouped.group`)."""

    __slots__ = ("surfaces", "raws", "count", "first", "last", "users", "hits", "clicks", "zero_results",
                 "latency", "top")

    def __init__(self, top: str) -> None:
        self.surfaces: dict[str, int] = {}
        self.raws: list[str] = []  # the exact queries (as logged) grouped here
        self.count = 0
        self.first: str | None = None
        self.last: str | None = None
        self.users: set[str] | None = None
        self.hits: Counter[str] | None = None
        self.clicks: Counter[str] | None = None
        self.zero_results = 0
        self.latency: list[float] | None = None
        self.top = top  # most frequent surface form

    def add(self, agg: Aggregate, raw: str, text: str, n: int) -> None:
        """Fold in exact query `raw` (redacted and whitespace-collapsed: `text`), asked `n` times."""
        self.surfaces[text] = self.surfaces.get(text, 0) + n
        self.raws.append(raw)
        self.count += n
        ts = agg.first.get(raw)
        if ts and (self.first is None or ts < self.first):
            self.first = ts
        ts = agg.last.get(raw)
        if ts and (self.last is None or ts > self.last):
            self.last = ts
        self.add_users(agg.users.get(raw))
        if agg.hits and raw in agg.hits:
            self.hits = self.hits or Counter()
            self.hits.update(agg.hits[raw])
        if agg.clicks and raw in agg.clicks:
            self.clicks = self.clicks or Counter()
            self.clicks.update(agg.clicks[raw])
        if agg.zero_results:
            self.zero_results += agg.zero_results.get(raw, 0)
        lat = agg.latency.get(raw) if agg.latency else None
        if lat:
            self.latency = self.latency or [0.0, 0]
            self.latency[0] += lat[0]
            self.latency[1] += lat[1]

    def add_users(self, users) -> None:
        if not users:
            return
        if not self.users:
            self.users = users  # shared, not copied: most groups have one form
        elif len(self.users) < USERS_CAP:
            both = self.users | users
            self.users = both if len(both) <= USERS_CAP else set(list(both)[:USERS_CAP])


class _Grouped:
    """The distinct normalised queries of an import as parallel lists, in the order the
    aggregate first met them. An object per distinct query would cost more than all the
    rest of the work, so `_Group`s are built only for the clusters the sampler reaches."""

    def __init__(self, agg: Aggregate, raws: list[str], texts: list[str], weights: list[int]) -> None:
        self.agg, self.raws, self.texts, self.weights = agg, raws, texts, weights
        self.norms: list[str] = []
        self.counts: list[int] = []  # times asked, per norm
        self.surfaces: list[str] = []  # most frequent surface form, per norm
        self.forms: list[int] = []  # per norm: its only exact query, or -1 (then see `several`)
        self.several: dict[int, list[int]] = {}  # norm -> its exact queries, when more than one

    def group(self, j: int) -> _Group:
        g = _Group(self.surfaces[j])
        for k in self.several[j] if self.forms[j] < 0 else [self.forms[j]]:
            g.add(self.agg, self.raws[k], self.texts[k], self.weights[k])
        return g


def _group(agg: Aggregate, redactor: Redactor, summary: ImportSummary, helper=None) -> _Grouped:
    raws = list(agg.counts)
    weights = list(agg.counts.values())
    summary.distinct_queries = len(raws)
    if agg.suspects is not None and not redactor.extra:  # screened by DuckDB: only the suspects are checked
        texts, counts = _cleaned(raws, weights, {}, list(compress(range(len(raws)), map(agg.suspects.__contains__, raws))))
        there = None
    else:
        # with a helper, it cleans the second half meanwhile (each query on its own)
        half = len(raws) // 2 if helper is not None and len(raws) >= PARALLEL_MIN else len(raws)
        there = helper.run(_cleaned, raws[half:], weights[half:], dict(redactor.extra)) if half < len(raws) else None
        texts, counts = _cleaned(raws[:half], weights[:half], redactor.extra)
    if there is not None:
        more, more_counts = there()
        texts += more
        counts.update(more_counts)
    redactor.counts.update(counts)
    if not all(texts):
        _bump(summary.filtered, "empty query", sum(w for w, t in zip(weights, texts, strict=True) if not t))
        kept = [k for k, t in enumerate(texts) if t]
        raws, texts, weights = [raws[k] for k in kept], [texts[k] for k in kept], [weights[k] for k in kept]
    # `text` is stripped with single spaces: for ASCII, NFKC is the identity and
    # casefold is lower(), so this equals normalize_query(text), much faster.
    norms = list(map(str.lower, texts))
    for k in list(compress(range(len(texts)), map(not_, map(str.isascii, texts)))):
        norms[k] = normalize_query(texts[k])

    grouped = _Grouped(agg, raws, texts, weights)
    last = dict(zip(norms, range(len(norms)), strict=True))  # norm -> its last exact query, in first-seen order
    grouped.norms = list(last)
    grouped.forms = list(last.values())
    grouped.counts = list(map(weights.__getitem__, grouped.forms))
    grouped.surfaces = list(map(texts.__getitem__, grouped.forms))
    if len(last) < len(norms):
        # the exact queries that are not their norm's last, in order: only their norms
        # have several forms (a position for every norm cost twice as much)
        earlier = list(compress(range(len(norms)), map(ne, map(last.__getitem__, norms), range(len(norms)))))
        shared = set(map(norms.__getitem__, earlier))
        js = list(compress(range(len(grouped.norms)), map(shared.__contains__, grouped.norms)))
        position = dict(zip(map(grouped.norms.__getitem__, js), js, strict=True))
        for k in earlier:
            ks = grouped.several.get(j := position[norms[k]])
            if ks is None:
                grouped.several[j] = [k]
            else:
                ks.append(k)
        for j, ks in grouped.several.items():
            ks.append(grouped.forms[j])  # the last form, after the earlier ones
            grouped.forms[j] = -1
            surfaces: dict[str, int] = {}
            for k in ks:
                surfaces[texts[k]] = surfaces.get(texts[k], 0) + weights[k]
            grouped.counts[j] = sum(surfaces.values())
            grouped.surfaces[j] = max(zip(surfaces.values(), surfaces, strict=True))[1]  # most frequent, or greater
    summary.distinct_normalised = len(grouped.norms)
    return grouped


def _cleaned(raws: list[str], weights: list[int], extra, screened: list[int] | None = None,
             ) -> tuple[list[str], Counter[str]]:
    """Each exact query whitespace-collapsed and redacted (an empty one stays empty),
    and the redactions by kind, counted by `weights` (log lines). `screened`: the
    indices of the only queries that may hold personal data (see SCREEN), if known."""
    redactor = Redactor(extra)
    if screened is None:
        texts = list(map(" ".join, map(str.split, raws)))
    else:  # a query SCREEN left out has no whitespace but single spaces: stripped is collapsed
        texts = list(map(str.strip, raws))
        for k in screened:
            texts[k] = " ".join(raws[k].split())
    if redactor.extra:  # user patterns: all
        suspects: Iterable[int] = range(len(texts))
    elif screened is not None:
        suspects = list(map(screened.__getitem__, _maybe_personal_at(list(map(texts.__getitem__, screened)))))
    else:
        suspects = _maybe_personal_at(texts)
    for k in suspects:
        texts[k] = redactor.redact(texts[k], weights[k])
    return texts, redactor.counts


def _maybe_personal_at(texts: list[str]) -> list[int]:
    """Indices of the `texts` (whitespace-collapsed) that `_maybe_personal` lets through,
    from two scans over all of them joined (see `_joined`), cheaper than a search per text."""
    found: set[int] = set()
    for at, joined in _joined(texts):
        if joined is None:
            found.update(k for k in at if _maybe_personal(texts[k]))
        else:  # no sign or word matches across a newline
            hits = sorted({m.start() for p in (_SIGNS_SCAN, _WORD) for m in p.finditer(joined)})
            found.update(map(at.__getitem__, _lines_of(joined, hits)))
    return sorted(found)


def _probes_at(texts: list[str]) -> list[int]:
    """Indices of the `texts` (whitespace-collapsed) in which `_PROBE` finds an injection
    probe. Each probe starts with `<` or `'` or holds `select` (as re.I reads it), so only
    the texts with one of those, found with `str.find` in all of them joined (see
    `_joined`), are searched: a search per text cost 0.06 s for the benchmark's 168k
    queries, most of it the pattern's look at every character."""
    maybe: set[int] = set()
    for at, joined in _joined(texts):
        if joined is None:
            maybe.update(at)
            continue
        for needle in ("<", "'", "select"):
            maybe.update(map(at.__getitem__, _lines_of(joined, _first_in_each_line(joined, needle))))
    return [k for k in sorted(maybe) if _PROBE.search(texts[k])]


def _joined(texts: list[str]) -> Iterator[tuple[Sequence[int], str | None]]:
    """The ASCII `texts`, then the others: their indices, and those texts joined by
    newlines as the lower-case patterns see them with re.I (lower-cased, or folded by
    `_fold`: lengths kept), or None where a text holds a newline of its own (then a
    line is not a text)."""
    is_ascii = list(map(str.isascii, texts))
    runs: list[Sequence[int]] = [range(len(texts))] if all(is_ascii) else [
        list(compress(range(len(texts)), is_ascii)), list(compress(range(len(texts)), map(not_, is_ascii)))]
    for at in runs:
        if not at:
            continue
        joined = "\n".join(texts if len(at) == len(texts) else map(texts.__getitem__, at))
        if joined.count("\n") != len(at) - 1:
            yield at, None
        else:
            yield at, joined.lower() if joined.isascii() else joined.translate(_fold(joined))


def _lines_of(joined: str, positions: Iterable[int]) -> Iterator[int]:
    """The line of `joined` each of the (increasing) `positions` is on."""
    line = counted = 0
    for at in positions:
        line += joined.count("\n", counted, at)
        counted = at
        yield line


def _first_in_each_line(joined: str, needle: str) -> Iterator[int]:
    """Where `needle` is first found on each line of `joined` that has it."""
    at = joined.find(needle)
    while at >= 0:
        yield at
        end = joined.find("\n", at)
        at = -1 if end < 0 else joined.find(needle, end + 1)


def _fold(text: str) -> dict[int, str]:
    """The translation that makes `text`, one character for one, what the lower-case
    patterns see as re.I would (see _A_LETTER)."""
    table = {code: chr(code + 32) for code in range(ord("A"), ord("Z") + 1)}
    for c in set(text):
        if not c.isascii() and _A_LETTER.fullmatch(c):
            table[ord(c)] = next(letter for letter, p in _LETTER.items() if p.fullmatch(c))
    return table


def _look_up_users(chosen: list[_ClusterItem], group_of: dict[str, _Group], lookups) -> None:
    """Users of the queued clusters, from readers that count them on demand (duckdb):
    first what their counting pass settled, then an exact look-up for the rest, except
    in clusters that already have USERS_CAP users (nothing can change what they show)."""
    if not lookups:
        return
    unsettled = []
    for users_of in lookups:
        found, left = users_of.settled(set(group_of))
        for raw, users in found.items():
            group_of[raw].add_users(users)
        unsettled.append(left)
    full = {raw for item in chosen if _user_count(item) >= USERS_CAP for g in item.groups for raw in g.raws}
    for users_of, left in zip(lookups, unsettled, strict=True):
        for raw, users in users_of.unsettled(left - full).items():
            group_of[raw].add_users(users)


def _look_up_details(group_of: dict[str, _Group], lookups) -> None:
    """First and last seen, lines without results and latency of the queued clusters'
    queries (`group_of`: exact query -> its group), from readers that keep them for the
    queries asked about (duckdb), beside what the python reader's lines gave."""
    for details_of in lookups:
        for raw, d in details_of(set(group_of)).items():
            g = group_of[raw]
            if d.first is not None:
                if g.first is None or d.first < g.first:
                    g.first = d.first
                if g.last is None or d.last > g.last:
                    g.last = d.last
            g.zero_results += d.zero_results
            if d.latency_n:
                g.latency = g.latency or [0.0, 0]
                g.latency[0] += d.latency_sum
                g.latency[1] += d.latency_n


def _user_count(item: _ClusterItem) -> int:
    """Distinct users of a cluster as known so far."""
    sets = [g.users for g in item.groups if g.users]
    return len(sets[0]) if len(sets) == 1 else len(set().union(*sets))


def _kept(grouped: _Grouped, min_length: int, max_length: int, noise, summary: ImportSummary) -> list[int]:
    """Indices of the norms that pass the length and noise filters; the others are counted
    by reason. One C-level pass per rule (a Python call per query costs more than the rules)."""
    norms, surfaces = grouped.norms, grouped.surfaces
    every = range(len(norms))
    reasons: list[str | None] = [None] * len(norms)

    def mark(hits, reason: str) -> None:
        for j in compress(every, hits):
            reasons[j] = reason

    # a later rule wins over an earlier one
    noise_reason = "noise (URL, probe or repeated character)"
    mark(map(_URL_OR_REPEATED.match, surfaces), noise_reason)
    for j in _probes_at(surfaces):
        reasons[j] = noise_reason
    for p in noise:
        mark(map(p.search, surfaces), "noise pattern")
        mark(map(p.search, norms), "noise pattern")
    # most norms start with a letter or digit, a word no placeholder can hide
    words = list(map(str.isalnum, map(itemgetter(slice(1)), norms)))
    for j in list(compress(every, map(not_, words))):
        words[j] = bool(_ALNUM.search(_PLACEHOLDER.sub("", norms[j]) if "<" in norms[j] else norms[j]))
    mark(map(not_, words), "noise (no words left)")
    lengths = list(map(len, norms))
    mark(map(max_length.__lt__, lengths), f"longer than {max_length} characters")
    mark(map(min_length.__gt__, lengths), f"shorter than {min_length} characters")
    for reason, n in Counter(filter(None, reasons)).items():
        _bump(summary.filtered, reason, n)
    return list(compress(every, map(not_, reasons)))


def _bump(table: dict[str, int], key: str, n: int = 1) -> None:
    table[key] = table.get(key, 0) + n


class _ClusterItem:
    __slots__ = ("groups", "count")

    def __init__(self, groups: list[_Group]):
        self.groups = groups
        self.count = groups[0].count if len(groups) == 1 else sum(g.count for g in groups)


class _Existing:
    """Queries already queued or already cases, for exact and fuzzy look-ups.

    The existing set does not change while the sampler runs, so clusters are checked
    `CHUNK` at a time: per digit signature and key length, one rapidfuzz `cdist` against
    only the keys whose length can reach the cutoff. The answers are those of checking
    each cluster on its turn with `extractOne` over its whole block."""

    def __init__(self, ws, similarity: float):
        self.similarity = similarity
        self.exact: dict[str, str] = {}
        for norm in ws.candidate_norms():
            self.exact[norm] = "already a candidate"
        for name in ws.set_names():
            try:
                cases = list(ws.question_set(name).read().cases.values())
            except Exception:  # a damaged set is verify's business, not the importer's
                continue
            for case in cases:
                self.exact.setdefault(normalize_query(case.query), f"already a case in {name}")
        blocks: dict[str, tuple[list[str], list[str]]] = {}
        existing = list(self.exact)
        for signature, key, why in zip(digit_signatures(existing), compare_keys(existing), self.exact.values(),
                                       strict=True):
            keys, whys = blocks.setdefault(signature, ([], []))
            keys.append(key)
            whys.append(why)
        self.blocks = {signature: _KeyBlock(*block) for signature, block in blocks.items()}

    def along(self, walk: list[int], members, norms: list[str]) -> Iterator[tuple[list[int], str | None]]:
        """(members, why the cluster is already known or None) for each cluster of the
        sampler's `walk`, in order, checked `CHUNK` at a time; `members(cluster)` gives
        its member indices into `norms`."""
        for start in range(0, len(walk), CHUNK):
            chunk = list(map(members, walk[start : start + CHUNK]))
            yield from zip(chunk, self.duplicates_of([list(map(norms.__getitem__, m)) for m in chunk]), strict=True)

    def duplicates_of(self, clusters: list[list[str]]) -> list[str | None]:
        """Why each cluster (its norms, leader first) is already known, or None: an exact
        match of any norm first, then the first of its `VARIANTS` first norms with a fuzzy
        match; of equally good fuzzy matches, the existing query met first."""
        found = [next((self.exact[n] for n in norms if n in self.exact), None) for norms in clusters]
        if self.similarity >= 100:
            return found
        # the (cluster, variant) pairs left, grouped by digit signature and key length
        pending = [(c, v) for c, norms in enumerate(clusters) if found[c] is None for v in range(min(len(norms), VARIANTS))]
        queries = [clusters[c][v] for c, v in pending]
        keys = compare_keys(queries)
        groups: dict[tuple[str, int], list[int]] = {}
        for p, signature, key in zip(range(len(keys)), digit_signatures(queries), keys, strict=True):
            if signature in self.blocks:
                groups.setdefault((signature, len(key)), []).append(p)
        first: dict[int, tuple[int, str]] = {}  # cluster -> its first variant with a match, and why
        for (signature, length), at in groups.items():
            for p, why in self.blocks[signature].matches([keys[p] for p in at], length, self.similarity):
                c, v = pending[at[p]]
                if c not in first or v < first[c][0]:
                    first[c] = (v, why)
        for c, (_v, why) in first.items():
            found[c] = why
        return found


class _KeyBlock:
    """The comparison keys of the existing queries that share a digit signature, sorted
    by length (for the window), with the order they were met in (which breaks ties)."""

    def __init__(self, keys: list[str], whys: list[str]) -> None:
        import numpy as np  # only here: 0.06 s to import, and only workspaces with queries get here

        by_length = sorted(range(len(keys)), key=lambda i: (len(keys[i]), i))
        self.keys = [keys[i] for i in by_length]
        self.lengths = np.array([len(k) for k in self.keys])
        self.met = np.array(by_length)  # position of each key in the order met
        self.whys = whys  # in the order met

    def matches(self, keys: list[str], length: int, similarity: float) -> list[tuple[int, str]]:
        """(position in `keys`, why) for each of `keys` (all `length` long) with a key here
        within `similarity`: the first best in the order met, as `extractOne` finds it."""
        import numpy as np

        # ratio = 100 (1 - indel / (la + lb)) and indel >= |la - lb|: only keys in this
        # length window can reach the cutoff (one character wider, against rounding)
        t = similarity / 100
        lo = np.searchsorted(self.lengths, length * t / (2 - t) - 1, "left")
        hi = np.searchsorted(self.lengths, length * (2 - t) / t + 1, "right") if t > 0 else len(self.keys)
        found: list[tuple[int, str]] = []
        rows = max(1, CELLS // max(1, hi - lo))  # a big queue or set: bounded score matrices
        for start in range(0, len(keys) if lo < hi else 0, rows):
            scores = process.cdist(
                keys[start : start + rows], self.keys[lo:hi], scorer=fuzz.ratio, score_cutoff=similarity,
                dtype=np.float64, workers=-1,
            )
            best = scores.max(axis=1)
            hit = np.flatnonzero(best >= similarity)
            ties = scores[hit] == best[hit, None]
            met = np.where(ties, self.met[lo:hi], len(self.met)).min(axis=1)
            found += zip((hit + start).tolist(), map(self.whys.__getitem__, met.tolist()), strict=True)
        return found


# ---- candidates ------------------------------------------------------------------------


def _candidates(ws, chosen: list[_ClusterItem], files: list[str], import_id: str) -> list[CandidateIn]:
    wanted: set[str] = set()
    for item in chosen:
        for g in item.groups:
            wanted.update(g.hits or ())
            wanted.update(g.clicks or ())
    # Logs point at headings; a heading's section may live inside a bigger passage.
    resolved = ws.resolve_passage_ids(wanted) if wanted else {}
    budget = ws.config.review.suggestions
    identifier_slice = "exact_identifier" in ws.config.slices
    out = []
    with paused_gc():  # a record per cluster, no cycles: the collector's scans cost a third
        for item in chosen:
            # most clusters have one group: its own counts, not copies (nothing here changes them)
            surfaces = _summed([g.surfaces for g in item.groups])
            hits = _summed([g.hits for g in item.groups])
            clicks = _summed([g.clicks for g in item.groups])
            users = _user_count(item)
            firsts, lasts = [], []
            zero = 0
            lat = [0.0, 0]
            for g in item.groups:
                firsts += [g.first] if g.first else []
                lasts += [g.last] if g.last else []
                zero += g.zero_results
                if g.latency:
                    lat[0] += g.latency[0]
                    lat[1] += int(g.latency[1])
            display = item.groups[0].top
            suggestions: list[Suggestion] = []
            taken: set[str] = set()
            for counter, role, reason in ((clicks, "primary", "clicked"), (hits, "secondary", "hit")):
                for pid, _n in _most_common(counter) if counter else ():
                    target = resolved.get(pid)
                    if target and target not in taken and len(suggestions) < budget:
                        taken.add(target)
                        suggestions.append(Suggestion(id=target, role=role, reason=reason))
            provenance: dict[str, Any] = {
                "source": "log",
                "files": files,
                "import": import_id,
                "count": item.count,
                "first_seen": iso_z(min(firsts)) if firsts else None,
                "last_seen": iso_z(max(lasts)) if lasts else None,
                "users": min(users, USERS_CAP) or None,
                "variants": [{"query": q, "count": n} for q, n in _most_common(surfaces, VARIANTS)],
                "distinct_forms": len(surfaces),
            }
            if users >= USERS_CAP:
                provenance["users_at_least"] = True
            if zero:
                provenance["zero_result_searches"] = zero
            if lat[1]:
                provenance["latency_ms_mean"] = round(lat[0] / lat[1], 1)
            if clicks:
                provenance["clicks"] = dict(_most_common(clicks, 10))
            out.append(
                CandidateIn(
                    query=display,
                    source_kind="log",
                    suggested_slice="exact_identifier" if identifier_slice and looks_like_identifier(display) else None,
                    suggestions=suggestions,
                    provenance={k: v for k, v in provenance.items() if v is not None},
                    count=item.count,
                )
            )
    return out


def _summed(counts: list[dict[str, int] | None]) -> dict[str, int]:
    """The sum of the `counts` (None: none); the only one itself, not a copy."""
    present = [c for c in counts if c]
    if len(present) < 2:
        return present[0] if present else {}  # an empty Counter() alone costs 4 us
    total: Counter[str] = Counter()
    for c in present:
        total.update(c)
    return total


def _most_common(counter: dict[str, int], n: int | None = None) -> list[tuple[str, int]]:
    """Counter.most_common with ties in key order, not in the order the reader met them
    (which differs between engines and, for DuckDB, between runs)."""
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
