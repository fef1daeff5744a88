"""`import_logs`: from search-log files to de-duplicated, privacy-safe review candidates.

The stages, each a module, data flowing one way: sources (files, streams, fingerprints)
-> reading (a reader per format; DuckDB for big JSON Lines and Parquet) -> counting per
exact query (aggregate) -> redaction, normalising and filters (grouping) -> clusters of
near-duplicates (cluster) -> what is already queued or in a set (dedupe) -> sampling to
the budget (sample) -> candidates and the queue (candidates, imports).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator._process import paused_gc
from curator.errors import InputError
from curator.logs.access import NO_PARAM
from curator.logs.aggregate import Aggregate
from curator.logs.candidates import ClusterItem, candidates, look_up_ids, look_up_users
from curator.logs.cluster import cluster
from curator.logs.dedupe import Existing
from curator.logs.duck_sql import spill_folder
from curator.logs.duck_users import hash_users
from curator.logs.grouping import Group, Grouped, bump, group, kept
from curator.logs.imports import KnownImports, queue_import, quick_key
from curator.logs.options import FileSummary, ImportOptions, ImportSummary, Settings, settle
from curator.logs.python_reader import FileRead
from curator.logs.reading import read_source
from curator.logs.redact import Redactor, read_names
from curator.logs.sample import at_least, sample_walk
from curator.logs.sources import Progress, Source, blank_lines, expand
from curator.text import sha256_hex

if TYPE_CHECKING:
    from curator.workspace import Workspace

__all__ = ["FileSummary", "ImportOptions", "ImportSummary", "import_logs"]

PREVIEW = 50


def import_logs(
    ws: Workspace,
    paths: Sequence[str | Path],
    options: ImportOptions | None = None,
    progress: Progress | None = None,
    on_file: Callable[[Source, int | None], None] | None = None,
    on_stage: Callable[[str], None] | None = None,
    **overrides: Any,
) -> ImportSummary:
    """Mine search-log files into review candidates of workspace `ws`.

    `paths`: files, globs, folders or `-` (stdin); gzip always, zstd when `zstandard`
    is installed. Options are an `ImportOptions` or its fields as keywords
    (`import_logs(ws, ["search.jsonl"], limit=100, sample="pps", seed=1)`).
    `progress(n)` is called with bytes read; `on_file(source, size)` before each file;
    `on_stage(text)` when the work after reading begins a stage (grouping, queueing).
    Raises InputError for a missing/unreadable file or a query field that no line has;
    malformed lines are counted in the summary and skipped. Nothing personal is
    stored or returned: queries are redacted before they are grouped.
    """
    opts = options or ImportOptions()
    if overrides:
        opts = ImportOptions(**{**asdict(opts), **overrides})
    settings = settle(opts, ws.config.logs)
    names = read_names(ws.root / settings.opts.redact_names) if settings.opts.redact_names else ()
    redactor = Redactor(settings.redact, names)  # a bad pattern fails before any file is read
    sources = expand(paths)
    if not sources:
        raise InputError(", ".join(map(str, paths)) or "(no paths)", "no log files to read")
    opts = settings.opts
    summary = ImportSummary(dry_run=opts.dry_run, sample=opts.sample or "top", limit=opts.limit or 0,
                            seed=None if opts.sample == "top" else opts.seed)
    # DuckDB spills what its memory cannot hold to a private folder, removed afterwards
    with spill_folder(ws.state_dir) as temp:
        _import(ws, sources, settings, summary, redactor, temp, progress, on_file, on_stage)
    return summary


def _import(ws: Workspace, sources: list[Source], settings: Settings, summary: ImportSummary, redactor: Redactor,
            temp: Path, progress: Progress | None, on_file: Callable[[Source, int | None], None] | None,
            on_stage: Callable[[str], None] | None) -> None:
    """Read, count, group, choose and queue: `import_logs` once its options are settled."""
    opts = settings.opts
    reads, total = _read_all(ws, sources, settings, summary, progress, on_file, temp)

    stage = on_stage or (lambda _text: None)
    stage(f"Grouping and clustering {len(total.counts):,} distinct queries")
    with paused_gc():  # millions of small containers, no cycles: a third faster
        summary.distinct_queries = len(total.counts)
        grouped = group(total, redactor, summary.filtered)  # takes the counts out of `total`
        summary.distinct_normalised = len(grouped.norms)
        del total  # the groups keep it for their details and users
        summary.redactions = dict(redactor.counts)
        chosen, updates = _choose(ws, grouped, settings, summary)
        del grouped  # all but the chosen groups: freed before DuckDB counts their users
    stage(f"Queueing {len(chosen):,} clusters")
    group_of = {raw: g for item in chosen + updates for g in item.groups for raw in g.raws}  # exact query -> its group
    look_up_users(chosen + updates, group_of, [r.users_of for r in reads if r.users_of])
    look_up_ids(chosen + updates, reads)
    _look_up_details(group_of, reads)

    files = [r.source.label for r in reads]
    import_id = sha256_hex("".join(sorted(r.fingerprint for r in reads)))[:12]
    found = candidates(ws, chosen, files, import_id)
    refreshed = list(zip([str(u.known) for u in updates], candidates(ws, updates, files, import_id), strict=True))
    summary.updated = len(refreshed)  # a dry run's: at most (an import counted in before adds nothing)
    summary.preview = [
        {
            "query": c.query,
            "count": c.count,
            "slice": c.suggested_slice,
            "variants": len(c.provenance.get("variants", [])),
            "suggestions": [s.id for s in c.suggestions],
        }
        for c in found[:PREVIEW]
    ]
    if not opts.dry_run:
        result = queue_import(ws, found, refreshed, reads, settings.window, import_id)
        summary.queued = len(result.added)
        summary.already_queued = len(result.existing)
        summary.candidate_ids = result.added
        summary.updated = len(result.updated)


def _read_all(ws: Workspace, sources: list[Source], settings: Settings, summary: ImportSummary,
              progress: Progress | None, on_file: Callable[[Source, int | None], None] | None,
              temp: Path | None = None) -> tuple[list[FileRead], Aggregate]:
    """Read every source not imported before (for this window) into one Aggregate, a
    FileSummary each; the reads of the files imported now."""
    opts = settings.opts
    known = KnownImports(ws)
    total = Aggregate()
    reads: list[FileRead] = []
    seen_fingerprints: set[str] = set()
    unreadable: list[InputError] = []  # the files skipped because they cannot be read
    hashed_users = False  # `total` holds users as DuckDB's hashes, not names
    for source in sources:
        if source.skipped:  # a symlink that leads nowhere: named in the summary, the rest read
            summary.files.append(FileSummary(source.label, "skipped", reason=source.skipped))
            continue
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
        try:
            read = read_source(
                source, opts.format, settings.fields, opts.param, settings.window, opts.max_line_bytes,
                progress or (lambda _n: None), opts.engine or "auto", temp, later=True,
                search_paths=tuple(opts.search_paths or ()),
                resume=None if opts.force else known.grown(source, settings.window),
            )
            _require_found(read)
        except InputError as exc:
            if len(sources) == 1:
                raise
            # one file of many that cannot be read (no query field, damaged, UTF-16): named
            # and skipped, the others imported; if none is, the first such error is raised
            summary.files.append(FileSummary(source.label, "skipped", reason=_reason(exc)))
            unreadable.append(exc)
            continue
        agg = read.agg
        fs = FileSummary(
            source.label, "imported", read.format, read.engine, read.fingerprint[:16], read.fields,
            agg.lines, agg.parsed,
            # copies: the total takes in the other files' lines when they are merged
            {r: {"count": x.count, "lines": list(x.lines)} for r, x in sorted(agg.rejected.items())},
            dict(agg.ignored),
            after_line=read.after_lines, hint=read.hint,
        )
        summary.files.append(fs)
        if read.fingerprint in seen_fingerprints:
            fs.status = "listed twice"  # the same content: a log and its compressed copy too
            continue
        if not opts.force and known.imported(read.fingerprint, settings.window, read.also_known_as):
            fs.status, fs.windows = "already imported", known.windows_of(read.fingerprint, read.also_known_as)
            continue
        seen_fingerprints.add(read.fingerprint)
        reads.append(read)
        summary.lines += agg.lines
        summary.parsed += agg.parsed
        summary.rejected += sum(x.count for x in agg.rejected.values())
        # Users are names to the python reader and hashes of them to DuckDB: where
        # both kinds of file meet, the names are hashed, so a user counts once
        if read.engine == "duckdb" and reads[:-1] and not hashed_users:
            hash_users(total)
        elif read.engine != "duckdb" and hashed_users:
            hash_users(agg)
        hashed_users = hashed_users or read.engine == "duckdb"
        # hits and clicks stay with their file (the python reader's; DuckDB looks them up), for the queued queries
        hits, clicks, agg.hits, agg.clicks = agg.hits, agg.clicks, {}, {}
        if len(reads) == 1:
            total = agg
        else:
            total.merge(agg)
        # the counts live on in `total` alone
        read.agg = Aggregate(lines=agg.lines, parsed=agg.parsed, hits=hits, clicks=clicks)
    if unreadable and not reads and not any(f.status == "already imported" for f in summary.files):
        raise unreadable[0]
    return reads, total


def _reason(error: InputError) -> str:
    """An InputError's message without the file's name (the summary names it), then its hint."""
    message = error.message.removeprefix(f"{error.path}: ")
    hint = (error.hint or "").rstrip(".")
    return f"{message}; {hint[:1].lower()}{hint[1:]}" if hint else message


def _choose(ws: Workspace, grouped: Grouped, settings: Settings,
            summary: ImportSummary) -> tuple[list[ClusterItem], list[ClusterItem]]:
    """Filter, cluster, drop what is already known and sample to the budget; also the
    clusters of candidates queued before, which gain this import's counts (past the
    budget, those that hold a queued candidate's exact text)."""
    opts = settings.opts
    assert opts.similarity is not None and opts.min_count is not None
    assert opts.min_length is not None and opts.max_length is not None
    mask = kept(grouped, opts.min_length, opts.max_length, settings.noise, summary.filtered)
    norms, counts, surfaces = grouped.norms, grouped.counts, grouped.surfaces
    # the filtered are left out by the mask, not by copies of the lists
    clusters = cluster(norms, counts, opts.similarity, surfaces, kept=None if mask.all() else mask)
    del mask
    summary.clusters = len(clusters)
    totals = clusters.totals(counts)
    eligible = at_least(totals, opts.min_count) if opts.min_count > 1 else None
    summary.eligible = len(clusters) if eligible is None else len(eligible)
    if summary.eligible < len(clusters):
        bump(summary.filtered, f"asked fewer than {opts.min_count} times", len(clusters) - summary.eligible)

    dedupe = Existing(ws, opts.similarity)
    chosen: list[ClusterItem] = []
    updates: list[ClusterItem] = []
    walk = sample_walk(totals, eligible, opts.sample or "top", opts.seed)
    del totals, eligible
    # members and items only for the clusters the sampler reaches: one per cluster costs 40 MB at 150k
    walked = 0
    for members, why, known in dedupe.along(walk, clusters.members, norms, surfaces):
        if opts.limit and len(chosen) >= opts.limit:
            break
        walked += 1
        if known:  # a candidate queued before: it gains this import's counts
            updates.append(ClusterItem([grouped.group(i) for i in members], known))
        if why:
            bump(summary.duplicates, why)
            continue
        chosen.append(ClusterItem([grouped.group(i) for i in members]))
    for c, known in dedupe.queued_in(walk[walked:], clusters.of, norms):  # past the budget: exact texts
        updates.append(ClusterItem([grouped.group(i) for i in clusters.members(c)], known))
    summary.sampled = len(chosen)
    return chosen, updates


def _look_up_details(group_of: dict[str, Group], reads: list[FileRead]) -> None:
    """First and last seen, zero results and latency of the queued groups' exact
    queries, from the files DuckDB read (see duck_details.py), beside what the
    Aggregate gave their groups (the other files', the lines the python reader handled)."""
    for read in reads:
        if read.details_of is None:
            continue
        for raw, found in read.details_of.look_up(set(group_of)).items():
            for d in found:
                group_of[raw].add_details(d.first, d.last, d.zero, d.lat_sum, d.lat_n)


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
    if agg.ignored.get(NO_PARAM):
        raise InputError(
            read.source.label,
            f"no request has the {read.fields.get('param')!r} parameter",
            hint="Name the search parameter with --param NAME.",
        )
