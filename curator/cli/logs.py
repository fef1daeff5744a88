"""`curator import-logs`: mine search logs into the review queue."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import RenderableType
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json
from curator.cli.sets import check_sets, no_verify_option  # the verify gate (issue 19)
from curator.errors import EXIT_PARTIAL, CuratorError

if TYPE_CHECKING:
    from curator.logs import ImportSummary
    from curator.logs.sources import Source
    from curator.workspace import Workspace


def _pairs(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for value in values:
        kind, sep, pattern = value.partition("=")
        if not sep or not kind.strip() or not pattern:
            raise CuratorError(f"--redact {value!r}: expected KIND=REGEX, e.g. TICKET='INC-\\d{{6}}'")
        out[kind.strip()] = pattern
    return out


@cli.command("import-logs")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format", "fmt", default="auto", show_default=True,
    type=click.Choice(["auto", "jsonl", "ubi", "csv", "tsv", "text", "access", "elb", "w3c", "solr", "parquet"]),
    help="Log format (auto: from the name and the first lines).",
)
@click.option("--query-field", help="Field or column with the query; dotted paths (request.params.q) work [logs.query_field].")
@click.option("--count-field", help="Pre-aggregated input: the field with how often the query was asked [logs.count_field].")
@click.option("--time-field", help="Field with the timestamp (default: timestamp, @timestamp, time, ts, ...; '' for none) [logs.time_field].")
@click.option("--user-field", help="Field with the user or session id (counted, never stored) [logs.user_field].")
@click.option("--hits-field", help="Field with the returned passage ids [logs.hits_field].")
@click.option("--clicks-field", help="Field with the clicked passage ids [logs.clicks_field].")
@click.option("--param", help="Access, load balancer, W3C (IIS, CloudFront), Solr and JSON access logs: the URL parameter that holds the query (default: q, query, search, ...) [logs.param].")
@click.option("--path", "search_paths", multiple=True, metavar="PATH",
              help="Request logs: only requests to this path (a prefix; repeatable), e.g. /search, so that "
                   "autocomplete requests stay out [logs.search_paths].")
@click.option("--since", help="Only lines at or after this time (2026-10-01 or an ISO time).")
@click.option("--until", help="Only lines before this time.")
@click.option("--similarity", type=click.FloatRange(0, 100), help="Fuzzy score that joins a cluster [logs.similarity].")
@click.option("--min-count", type=click.IntRange(1), help="Drop clusters asked fewer times [logs.min_count].")
@click.option("--min-length", type=click.IntRange(1), help="Shortest query kept, in characters [logs.min_length].")
@click.option("--max-length", type=click.IntRange(1), help="Longest query kept [logs.max_length].")
@click.option("--noise", multiple=True, metavar="REGEX", help="Drop queries matching this (repeatable).")
@click.option("--redact", multiple=True, metavar="KIND=REGEX", help="Also redact this pattern as <KIND> (repeatable).")
@click.option("--redact-names", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also redact these names (one per line, any case) as <NAME> [logs.redact_names].")
@click.option("--sample", type=click.Choice(["top", "random", "pps"]),
              help="How to pick clusters: most asked, uniformly, or proportional to frequency "
                   "[logs.sample, default top].")
@click.option("--limit", type=click.IntRange(0),
              help="Review budget: at most this many new candidates, 0 for all [logs.limit, default 500].")
@click.option("--seed", type=int, help="Seed for --sample random|pps.")
@click.option("--dry-run", is_flag=True, help="Show what would be queued; change nothing.")
@click.option("--force", is_flag=True, help="Read logs again even if already imported.")
@click.option("--engine", type=click.Choice(["auto", "duckdb", "python"]),
              help="Who reads JSON Lines and Parquet: DuckDB (fast), the python readers, or auto "
                   "(DuckDB where the input allows) [logs.engine, default auto].")
@json_option
@no_verify_option
@pass_ws
def import_logs_cmd(ws: Workspace, paths: tuple[str, ...], fmt: str, query_field: str | None,
                    count_field: str | None, time_field: str | None, user_field: str | None,
                    hits_field: str | None, clicks_field: str | None, param: str | None,
                    search_paths: tuple[str, ...], since: str | None, until: str | None,
                    similarity: float | None, min_count: int | None, min_length: int | None,
                    max_length: int | None, noise: tuple[str, ...],
                    redact: tuple[str, ...], redact_names: str | None, sample: str | None, limit: int | None,
                    seed: int | None, dry_run: bool, force: bool, engine: str | None, as_json: bool,
                    no_verify: bool) -> None:
    """Mine real queries from search logs into the review queue.

    Reads JSON Lines (any field, auto-detected; JSON access logs too), CSV/TSV with a
    header (analytics exports too), plain text (one query per line), nginx/Apache access
    logs, AWS load balancer, IIS and CloudFront (W3C) and Solr logs, OpenSearch UBI query
    records and Parquet; gzip (and zstd), globs, folders, and `-` for stdin. JSON Lines
    and Parquet files are counted by DuckDB (--engine), everything else by the python
    readers.
    Queries are counted, redacted (e-mails, phones, IPs, cards, keys and tokens become
    <EMAIL>, <PHONE>, ...), grouped with their typos and word-order variants, filtered,
    de-duplicated against the queue and every set, sampled to --limit and queued with
    their counts and the clicked/returned passages as suggestions. Broken lines are
    counted and skipped (exit 3); a log already imported (for the --since/--until asked)
    is recognised and skipped.

    \b
    Example:
        curator import-logs logs/search.jsonl
        curator import-logs 'logs/*.jsonl.gz' --since 2026-10-01 --limit 200 --sample pps --seed 7
        curator import-logs access.log --param q --path /search --dry-run
        curator import-logs 'iis/u_ex*.log'
        curator import-logs /var/solr/logs/solr.log
        curator import-logs "Analytics Search Terms.csv" --count-field "Total Unique Searches"
        curator import-logs export.csv --query-field search_term --count-field n
        curator import-logs lake/queries.parquet --count-field n --engine duckdb
        zcat search.jsonl.gz | curator import-logs - --format jsonl --json
    """
    check_sets(ws, None, no_verify)  # de-duplication against every set
    from curator.logs import ImportOptions, import_logs

    options = ImportOptions(
        format=fmt, query_field=query_field, count_field=count_field, time_field=time_field,
        user_field=user_field, hits_field=hits_field, clicks_field=clicks_field, param=param,
        search_paths=list(search_paths) or None,
        since=since, until=until, similarity=similarity, min_count=min_count, min_length=min_length,
        max_length=max_length, noise=list(noise), redact=_pairs(redact),
        redact_names=str(Path(redact_names).resolve()) if redact_names else None, sample=sample, limit=limit,
        seed=seed, dry_run=dry_run, force=force, engine=engine,
    )
    typed = "-" in paths and sys.stdin.isatty()  # `-` at a prompt: say what it waits for, draw no bar over it
    if typed:
        err_console.print("[dim]Reading queries from the terminal, one per line; end with Ctrl-D.[/]")
    with Progress(
        TextColumn("{task.description}"), BarColumn(), _ForReading(DownloadColumn()),
        _ForReading(TransferSpeedColumn()), TimeElapsedColumn(), console=err_console, transient=True,
        disable=as_json or typed or not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task("Reading", total=None, reading=True)
        stage = bar.add_task("", total=None, visible=False, reading=False)  # no measure of how far: it pulses

        def on_file(source: Source, size: int | None) -> None:
            bar.update(stage, visible=False)
            bar.update(task, description=f"Reading {escape(source.label[-50:])}", total=size, completed=0,
                       visible=True)

        def on_stage(text: str) -> None:
            bar.update(task, visible=False)
            bar.reset(stage, description=text, visible=True)  # its time from now

        summary = import_logs(
            ws, list(paths), options, progress=lambda n: bar.advance(task, n), on_file=on_file,
            on_stage=on_stage,
        )
    if as_json:
        print_json(summary.to_dict())
    else:
        _print(summary)
    if summary.partial or any(f.status == "skipped" for f in summary.files):
        sys.exit(EXIT_PARTIAL)


class _ForReading(ProgressColumn):
    """A column shown for the reading task only (bytes read, speed), blank for a stage."""

    def __init__(self, column: ProgressColumn) -> None:
        super().__init__()
        self.column = column

    def render(self, task: Task) -> RenderableType:
        return self.column.render(task) if task.fields.get("reading") else ""


SKIPPED_SHOWN = 5  # files skipped for one reason that are named; the rest are counted (all in --json)


def _print(s: ImportSummary) -> None:
    skipped = Counter(f.status for f in s.files if f.status != "imported")
    shown: Counter[str] = Counter()
    for f in s.files:
        if f.status != "imported":
            shown[f.status] += 1
            if shown[f.status] > SKIPPED_SHOWN:
                if shown[f.status] == skipped[f.status]:  # after the last of them
                    console.print(f"[yellow]... and {skipped[f.status] - SKIPPED_SHOWN:,} more files "
                                  f"{f.status}[/]")
                continue
        if f.status == "listed twice":
            console.print(f"[yellow]{escape(f.path)}[/]: listed twice (fingerprint {f.fingerprint}): the same "
                          "content as another file of this import, counted once.")
            continue
        if f.status == "skipped":
            console.print(f"[yellow]{escape(f.path)}[/]: skipped, {escape(f.reason or 'cannot be read')}.")
            continue
        if f.status == "empty":
            lines = f"{f.lines:,} blank line{'s' if f.lines != 1 else ''}" if f.lines else "no lines"
            console.print(f"[yellow]{escape(f.path)}[/]: empty ({lines}), nothing to import.")
            continue
        if f.status != "imported":
            from curator.logs.imports import describe

            span = describe(f.windows) if f.windows else None
            window = f" for {span}" if span else ""
            console.print(f"[yellow]{escape(f.path)}[/]: {f.status}{window} (fingerprint {f.fingerprint}); "
                          "--force reads it again.")
            continue
        fields = ", ".join(f"{k}={v}" for k, v in f.fields.items())
        read_as = f"{f.format}, {f.engine}" + (f"; {fields}" if fields else "")  # a text file has no fields
        after = f" after the {f.after_line:,} imported before (it grew)" if f.after_line else ""
        console.print(f"[bold]{escape(f.path)}[/] ({escape(read_as)}): "
                      f"{f.lines:,} line{'' if f.lines == 1 else 's'}{after}, {f.parsed:,} parsed")
        if f.hint:
            console.print(f"  [dim]hint:[/] {escape(f.hint)}")
        for reason, info in f.rejected.items():
            where = ", ".join(str(n) for n in info["lines"])
            more = " ..." if info["count"] > len(info["lines"]) else ""
            console.print(f"  [red]rejected[/] {info['count']:,} × {escape(reason)} (line {where}{more})")
        for reason, n in f.ignored.items():
            console.print(f"  [dim]ignored {n:,} × {escape(reason)}[/]")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("distinct queries", f"{s.distinct_queries:,} exact, {s.distinct_normalised:,} normalised")
    table.add_row("clusters", f"{s.clusters:,} ({s.eligible:,} after filters)")
    if s.redactions:
        table.add_row("redacted", ", ".join(f"{k} {v:,}" for k, v in sorted(s.redactions.items())))
    for reason, n in sorted(s.filtered.items()):
        table.add_row("filtered", f"{n:,} × {escape(reason)}")
    for reason, n in sorted(s.duplicates.items()):
        table.add_row("duplicates", f"{n:,} × {escape(reason)}")
    seed = "" if s.seed is None else f", seed {s.seed}"
    table.add_row("sampled", f"{s.sampled:,} ({s.sample}{seed}, limit {s.limit or 'none'})")
    if s.dry_run:
        table.add_row("queued", "nothing (dry run)")
        if s.updated:
            table.add_row("updated", f"up to {s.updated:,} queued candidates would gain this import's counts")
    else:
        table.add_row("queued", f"{s.queued:,} new candidates" + (f", {s.already_queued} already queued" if s.already_queued else ""))
        if s.updated:
            table.add_row("updated", f"{s.updated:,} queued candidates gained this import's counts, users and "
                                     "first/last seen")
    console.print(table)
    if s.dry_run and s.preview:
        preview = Table(title="Would queue")
        for name in ("count", "query", "slice", "variants", "suggested"):
            preview.add_column(name, justify="left" if name in ("query", "slice") else "right")
        for p in s.preview:
            preview.add_row(f"{p['count']:,}", escape(p["query"]), p["slice"] or "", str(p["variants"]),
                            str(len(p["suggestions"])))
        console.print(preview)
        if s.sampled > len(s.preview):
            console.print(f"[dim]... and {s.sampled - len(s.preview)} more[/]")
    if s.queued:
        console.print("[dim]Next: curator review (pending candidates, most asked first)[/]")
