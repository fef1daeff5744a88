"""`curator suggest QUERY`: the pooled suggestions a review card would show, with sources."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json

if TYPE_CHECKING:
    from curator.suggest.dense import DenseIndex
    from curator.workspace import Workspace


def missing_vectors(ws: Workspace, index: DenseIndex) -> str | None:
    """Why the dense source sees only part of the corpus, or None when every current
    passage has a vector: dense turned on after `corpus add`, or a new model."""
    total = ws.corpus_stats().passages
    if len(index.ids) >= total:
        return None
    return (f"{total - len(index.ids):,} of {total:,} current passages have no vector of "
            f"{index.embedder.name}; `curator corpus embed` embeds them")


@cli.command("suggest")
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--limit", default=20, show_default=True, help="How many pooled passages to show.")
@click.option("--no-dense", is_flag=True, help="Leave the dense retriever out even when configured.")
@json_option
@pass_ws
def suggest_cmd(ws: Workspace, query: tuple[str, ...], limit: int, no_dense: bool, as_json: bool) -> None:
    """Pooled suggestions for a query: BM25, the dense retriever ([suggest] dense), and the
    top `depth` of every stored run in retriever-runs/ or runs/ that has the query. Order:
    passages the query names verbatim (`exact`), then every source's first choice, then
    the rest, each tier by reciprocal rank. Each row names its sources and their ranks.

    \b
    Example:
        curator suggest "ceph cluster near full"
        curator suggest KubePodCrashLooping
        curator suggest "how do I rotate the api key" --json
    """
    from curator.suggest.pool import Pool

    text = " ".join(query)
    pool = Pool(ws, dense=not no_dense)
    rows = pool.suggest(text, limit=limit)
    for problem in pool.problems:
        err_console.print(f"[yellow]skipped run[/] {escape(problem)}", highlight=False)
    index = pool.dense()
    gap = missing_vectors(ws, index) if index is not None else None
    if gap:
        err_console.print(f"[yellow]dense:[/] {escape(gap)}", highlight=False)
    if as_json:
        print_json({"query": text, "suggestions": [dict(rank=i, **p.as_json()) for i, p in enumerate(rows, 1)]})
        return
    if not rows:
        console.print("No suggestions.")
        return
    table = Table("#", "passage", "score", "sources")
    for i, p in enumerate(rows, 1):
        table.add_row(str(i), escape(p.id), f"{p.score:.4f}", escape(", ".join(f"{s} #{r}" for s, r in p.sources)))
    console.print(table)
