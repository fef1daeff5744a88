"""`curator queue add|list`: questions typed in by hand, and the review queue itself."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json
from curator.errors import EXIT_PARTIAL, CuratorError

if TYPE_CHECKING:
    from curator.workspace import Workspace


@cli.group()
def queue() -> None:
    """The review queue: add your own questions, list what is waiting."""


@queue.command("add")
@click.argument("questions", nargs=-1)
@click.option("--from-file", "from_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Read questions from a file, one per line (blank lines and # comments skipped).")
@click.option("--slice", "slice_name", help="Suggested slice.")
@click.option("--passage", "passages", multiple=True, metavar="ID",
              help="A passage to suggest as primary (repeatable); must exist in the corpus.")
@click.option("--negative", is_flag=True, help="The corpus should not answer it (suggests slice negative).")
@json_option
@pass_ws
def queue_add(ws: Workspace, questions: tuple[str, ...], from_file: Path | None, slice_name: str | None,
              passages: tuple[str, ...], negative: bool, as_json: bool) -> None:
    """Queue questions typed in by hand; they are reviewed like mined and generated ones.

    A question already queued (same text after case and whitespace folding) is reported
    and not added twice; exit code 3 then.

    \b
    Example:
        curator queue add "How do I replay the DLQ?" --slice paraphrase --passage 'runbooks/parser.md#replay-procedure'
        curator queue add --from-file questions.txt
    """
    from curator.models import CandidateIn, Suggestion

    texts = [q.strip() for q in questions if q.strip()]
    if from_file:
        for line in from_file.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                texts.append(line.strip())
    if not texts:
        raise click.UsageError("give at least one question (or --from-file)")
    if negative:
        slice_name = slice_name or "negative"
        if passages:
            raise click.UsageError("--negative and --passage exclude each other")
    if slice_name and slice_name not in ws.config.slices:
        raise CuratorError(f"unknown slice {slice_name!r}", f"Slices: {', '.join(ws.config.slices)}.")
    missing = sorted(set(passages) - ws.existing_passage_ids(passages))
    if missing:
        raise CuratorError(f"not in the corpus: {', '.join(missing)}", "Find ids with `curator corpus search`.")
    suggestions = [Suggestion(id=p, role="primary", reason="typed in") for p in passages]
    result = ws.add_candidates(
        CandidateIn(query=text, source_kind="manual", suggested_slice=slice_name, suggestions=suggestions,
                    expect_empty=negative, provenance={"source": "manual", "reviewer": ws.config.reviewer_name})
        for text in texts
    )
    if as_json:
        print_json({"added": result.added, "already_queued": result.existing})
    else:
        console.print(f"Queued {len(result.added)} question(s); review them with [cyan]curator review --source manual[/].")
        if result.existing:
            err_console.print(f"[yellow]{len(result.existing)} already queued[/] (candidate ids {result.existing}).")
    if result.existing:
        sys.exit(EXIT_PARTIAL)


@queue.command("list")
@click.option("--state", type=click.Choice(["pending", "kept", "binned", "skipped"]), default="pending",
              show_default=True)
@click.option("--source", type=click.Choice(["all", "logs", "generated", "manual", "triage"]), default="all",
              show_default=True)
@click.option("-n", "--limit", default=20, show_default=True, help="How many to show (0: all).")
@json_option
@pass_ws
def queue_list(ws: Workspace, state: str, source: str, limit: int, as_json: bool) -> None:
    """List candidates in the queue, most asked first.

    \b
    Example:
        curator queue list --source logs -n 50
        curator queue list --state binned --json
    """
    items = ws.candidates(state=state, source_kind=source, limit=limit or None)
    if as_json:
        print_json([c.model_dump() for c in items])
        return
    if not items:
        console.print(f"No {state} candidates.")
        return
    table = Table()
    for column in ("id", "question", "source", "count", "slice", "suggested passages"):
        table.add_column(column)
    for c in items:
        table.add_row(str(c.id), escape(c.query), c.source_kind, str(c.count), c.suggested_slice or "–",
                      str(len(c.suggestions)))
    console.print(table)
