"""What an import is told (`ImportOptions`, resolved against the workspace's [logs]) and
what it reports (`ImportSummary`, with a `FileSummary` per file)."""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field, replace
from dataclasses import fields as dataclass_fields
from typing import Any

from curator.config import LogsConfig
from curator.errors import ConfigError, CuratorError
from curator.logs.aggregate import parse_time
from curator.logs.fields import Fields
from curator.logs.lines import MAX_LINE_BYTES, Window
from curator.logs.reading import ENGINES, FORMATS
from curator.logs.sample import SAMPLERS


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
    search_paths: list[str] | None = None  # request logs: the paths searches go to (prefixes; [] every path)
    since: str | None = None
    until: str | None = None
    similarity: float | None = None
    min_count: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    noise: list[str] = field(default_factory=list)
    redact: dict[str, str] = field(default_factory=dict)
    redact_names: str | None = None  # a file of names to redact ([logs] redact_names, relative to the workspace)
    sample: str | None = None  # top | random | pps ([logs] sample, else top)
    limit: int | None = None  # 0: no limit ([logs] limit, else 500)
    seed: int | None = None
    dry_run: bool = False
    force: bool = False
    engine: str | None = None  # auto | duckdb | python: who reads JSON Lines and Parquet ([logs] engine)
    max_line_bytes: int = MAX_LINE_BYTES


@dataclass
class FileSummary:
    path: str
    status: str  # imported | already imported | listed twice | empty | skipped
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
    reason: str | None = None  # skipped: why (a dangling symlink, a symlink loop)
    after_line: int | None = None  # a log grown since its import: read from the line after this one
    hint: str | None = None  # how the file may be meant to be read (an export of counts: --count-field)


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
    updated: int = 0  # candidates queued before that this import's counts were added to
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


@dataclass
class Settings:
    """An import's options with nothing left unset, and what they make."""

    opts: ImportOptions  # with the workspace's [logs] for what it left unset
    redact: dict[str, str]  # KIND -> regex, the workspace's and --redact's
    noise: list[re.Pattern[str]]
    window: Window
    fields: Fields


def settle(opts: ImportOptions, cfg: LogsConfig) -> Settings:
    """`opts` with what it leaves unset (None) taken from the workspace's [logs], whose
    keys of the same names are their defaults (similarity, limits, sample, fields, ...),
    checked; a seed is drawn for a sample that needs one (and reported, so any sample
    can be drawn again)."""
    shared = {f.name for f in dataclass_fields(ImportOptions)} & set(type(cfg).model_fields)
    opts = replace(opts, **{k: getattr(cfg, k) for k in shared if getattr(opts, k) is None})
    if opts.format not in FORMATS:
        raise CuratorError(f"unknown log format {opts.format!r}; expected one of {', '.join(FORMATS)}")
    if opts.engine not in ENGINES:
        raise CuratorError(f"unknown engine {opts.engine!r}; expected one of {', '.join(ENGINES)}")
    if opts.sample not in SAMPLERS:
        raise CuratorError(f"unknown sampler {opts.sample!r}; expected one of {', '.join(SAMPLERS)}")
    if opts.limit is None or opts.limit < 0:
        raise CuratorError("--limit must be 0 (no limit) or more")
    for path in opts.search_paths or ():
        if not path.startswith("/"):
            raise CuratorError(f"--path {path!r}: expected the path searches go to, such as /search")
    if opts.sample != "top" and opts.seed is None:
        opts = replace(opts, seed=random.SystemRandom().randrange(1 << 31))
    return Settings(
        opts,
        {**cfg.redact_patterns, **opts.redact},
        [_compile(p, "noise pattern") for p in [*cfg.noise_patterns, *opts.noise]],
        _window(opts),
        Fields(opts.query_field, opts.count_field, opts.time_field, opts.user_field,
               opts.hits_field, opts.clicks_field, opts.results_field, opts.latency_field),
    )


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{what} {pattern!r} is not a valid regex: {exc}") from None


def _bound(value: str | None, option: str) -> str | None:
    if value is None:
        return None
    ts = parse_time(value)
    if ts is None:
        raise CuratorError(f"{option} {value!r} is not a date or time (expected e.g. 2026-10-01 or 2026-10-01T08:00:00Z)")
    return ts


def _window(opts: ImportOptions) -> Window:
    window = Window(_bound(opts.since, "--since"), _bound(opts.until, "--until"))
    if window.since and window.until and window.since >= window.until:
        raise CuratorError(f"--since {opts.since} is not before --until {opts.until}: no line could be imported "
                           "(--until is the first moment left out)")
    return window
