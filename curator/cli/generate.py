"""`curator generate`: candidate questions from the corpus, with a model or offline."""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json
from curator.cli.sets import check_sets, no_verify_option  # the verify gate (issue 19)
from curator.errors import EXIT_FAILED, EXIT_PARTIAL

if TYPE_CHECKING:
    from curator.generate import GenerateSummary
    from curator.workspace import Workspace


@cli.command("generate")
@click.option("-n", "--passages", type=click.IntRange(min=1),
              help="How many passages to draw, stratified across documents ([generate] passages, 20).")
@click.option("--slice", "slices", multiple=True,
              help="Only these slices (repeatable). Default: [generate] slices, else every "
                   "configured slice with a prompt.")
@click.option("--seed", default=0, show_default=True, help="Seed for passage selection.")
@click.option("--backend", type=click.Choice(["model", "identifiers"]), default="model", show_default=True,
              help="`identifiers`: exact-identifier questions from templates, offline, no model.")
@click.option("--model", help="Model name (default: [model] name in curator.toml).")
@click.option("--base-url", help="OpenAI-compatible endpoint (default: [model] base_url / OPENAI_BASE_URL).")
@click.option("--concurrency", type=click.IntRange(1, 256),
              help="Requests in flight ([model] concurrency, 8).")
@click.option("--timeout", type=click.FloatRange(min=0.1), help="Seconds per request.")
@click.option("--max-retries", type=click.IntRange(0, 20), help="Retries on 429/5xx/timeouts.")
@click.option("--max-calls", type=click.IntRange(min=1), help="Stop cleanly after this many model calls.")
@click.option("--max-cost", type=click.FloatRange(min=0), help="Stop cleanly before spending more (USD).")
@click.option("--response-format", type=click.Choice(["auto", "json_schema", "json_object", "text"]),
              default="auto", show_default=True,
              help="Structured output mode; `auto` falls back when the server lacks json_schema.")
@click.option("--dry-run", is_flag=True, help="Print calls, tokens and cost the run would take; call nothing.")
@click.option("--batch", is_flag=True, help="Send the work through the OpenAI Batch API (half price).")
@click.option("--no-wait", is_flag=True, help="With --batch: submit and return; collect with --resume-batch.")
@click.option("--resume-batch", metavar="ID", help="Poll and ingest a batch submitted earlier.")
@click.option("--list-batches", is_flag=True, help="List the batches submitted from this workspace.")
@click.option("--poll-interval", type=click.FloatRange(min=0, min_open=True),
              help="Seconds between batch polls ([generate] poll_interval, 30).")
@click.option("--multi-hop-ratio", type=click.FloatRange(0, 5),
              help="Multi-hop groups per selected passage ([generate] multi_hop_ratio, 0.2).")
@click.option("--group-size", type=click.IntRange(2, 3),
              help="Passages per multi-hop group ([generate] group_size, 2).")
@click.option("--passage", "only", multiple=True, help="Only draw from these passage ids (repeatable).")
@click.option("--min-words", type=click.IntRange(min=1),
              help="Skip passages shorter than this ([generate] min_words, 25).")
@click.option("--paraphrase-max-overlap", type=click.FloatRange(0, 100),
              help="Reject paraphrases whose wording overlaps the passage more (rapidfuzz 0-100; "
                   "[generate] paraphrase_max_overlap, 80).")
@click.option("--negative-max-coverage", type=click.FloatRange(0, 1),
              help="Reject negatives when a search hit holds this share of their words "
                   "([generate] negative_max_coverage, 0.75).")
@click.option("--duplicate-similarity", type=click.FloatRange(0, 100),
              help="Drop questions this similar (rapidfuzz 0-100) to an existing one "
                   "([generate] duplicate_similarity, 90).")
@json_option
@no_verify_option
@pass_ws
def generate_cmd(ws: Workspace, slices: tuple[str, ...], only: tuple[str, ...], list_batches: bool, no_wait: bool,
                 as_json: bool, no_verify: bool, **options: Any) -> None:
    """Generate candidate questions for every slice and queue them for review.

    Draws passages stratified across documents (skipping ones that candidates or cases
    already cover), asks the model for all single-passage slices in one call per passage,
    checks each question against its slice's rules, drops near-duplicates and queues the
    rest with provenance. Results are cached: a rerun costs nothing, an interrupted run
    resumes. The API key comes from the environment only and is never stored or printed.
    Options left out take their defaults from curator.toml ([generate], [model]); with
    [model] provider = "azure" the run goes to Azure OpenAI.
    Exits 3 when some tasks failed or a budget stopped the run (each failure is listed).

    \b
    Example:
        curator generate --dry-run -n 200          # calls, tokens, cost; nothing sent
        curator generate -n 50 --max-cost 0.50
        curator generate --backend identifiers -n 40     # offline, no model
        curator generate -n 5000 --batch --no-wait && curator generate --resume-batch ID
    """
    check_sets(ws, None, no_verify or list_batches)  # de-duplication reads every set
    from curator.generate import generate
    from curator.generate.batch import list_batches as batches

    if list_batches:
        rows = batches(ws)
        if as_json:
            print_json(rows)
        for r in [] if as_json else rows:
            console.print(f"{r['id']}  {r['status']:<12} {r['tasks']:>5} tasks  {r['created_at']}"
                          f"  {'ingested ' + r['ingested_at'] if r['ingested_at'] else ''}")
        return
    with Progress(
        TextColumn("Generating"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
        TimeElapsedColumn(), console=err_console, transient=True,
        disable=as_json or options["dry_run"] or not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task("generate", total=None)
        summary = generate(
            ws, slices=list(slices) or None, only=list(only) or None,
            wait=not no_wait, progress=lambda done, total: bar.update(task, completed=done, total=total),
            **options,
        )
    if as_json:
        print_json(dataclasses.asdict(summary))
    else:
        _print(summary)
    if summary.dry_run:
        return
    if summary.failures and not summary.candidates_added and not summary.tasks_cached:
        sys.exit(EXIT_FAILED)
    if not summary.complete:
        sys.exit(EXIT_PARTIAL)


def _print(s: GenerateSummary) -> None:
    if s.dry_run:
        e = s.estimate or {}  # set by every dry run
        cost = f"${e['cost']:.4f}" if e["cost"] is not None else "unknown (no price for this model)"
        console.print(
            f"Dry run for {s.passages_selected} passages with {escape(s.model)}: "
            f"{e['calls']} calls ({e['cached_tasks']} more tasks cached, free), "
            f"~{e['prompt_tokens']:,} prompt + ~{e['completion_tokens']:,} completion tokens, "
            f"estimated cost {cost}{' at batch prices' if e['batch'] else ''}."
        )
        console.print(f"[dim]{e['note']}[/]")
        return
    if not s.tasks and s.passages_skipped_covered and not s.batch_id:
        console.print(
            f"Nothing to generate: all {s.passages_skipped_covered} eligible passages are already "
            "covered by cases or generated candidates. Import more of the corpus, or use "
            "--passage ID to ask about a covered passage again."
        )
        return
    if s.batch_id:
        console.print(f"Batch {escape(s.batch_id)}: {escape(s.batch_status or '')}")
    console.print(
        f"Queued {s.candidates_added} candidates from {s.passages_selected} passages "
        f"({s.tasks} tasks: {s.calls} model calls, {s.tasks_cached} cached) with {escape(s.model)}."
    )
    if s.by_slice:
        console.print("  " + " · ".join(f"{k} {v}" for k, v in sorted(s.by_slice.items())))
    if s.calls:
        console.print(f"Tokens: {s.prompt_tokens:,} prompt + {s.completion_tokens:,} completion; "
                      f"cost ${s.cost:.4f}.")
    if s.passages_skipped_covered:
        console.print(f"[dim]{s.passages_skipped_covered} passages skipped: already covered by "
                      "candidates or cases.[/]")
    if s.already_queued:
        console.print(f"[dim]{s.already_queued} question(s) were already queued.[/]")
    for reason, n in sorted(s.rejected.items(), key=lambda kv: -kv[1]):
        console.print(f"[dim]rejected {n}: {escape(reason)}[/]")
    for f in s.failures:
        err_console.print(f"[yellow]failed[/] {escape(f.task)} {escape(', '.join(f.passages))}: "
                          f"{escape(f.error)}", highlight=False)
    if s.stopped and s.batch_id:
        err_console.print(f"[yellow]waiting:[/] {escape(s.stopped)}.", highlight=False)
    elif s.stopped:
        err_console.print(f"[yellow]stopped:[/] {escape(s.stopped)}. Run the same command again "
                          "to continue (finished work is cached).", highlight=False)
    if s.candidates_added:
        console.print("Review them: curator review --source generated")
