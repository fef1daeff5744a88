"""`curator sets import`: append an existing set (BEIR, TREC, ranx, curator JSONL) as cases."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from curator.cli.main import console, err_console, json_option, pass_ws, print_json
from curator.cli.sets import sets_group
from curator.errors import EXIT_PARTIAL

if TYPE_CHECKING:
    from curator.workspace import Workspace


@sets_group.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["beir", "trec", "ranx", "jsonl"]), required=True,
              help="beir: a folder with queries.jsonl and qrels/test.tsv; trec: a folder with qrels.txt and "
                   "topics.tsv, or a qrels file; ranx: a qrels JSON (needs --queries); jsonl: a curator export.")
@click.option("--set", "set_name", help="The set to append to (default: the workspace's default set).")
@click.option("--queries", type=click.Path(path_type=Path, dir_okay=False),
              help="The query texts: JSONL with _id and text, or TSV id<TAB>text (default: beside the qrels).")
@click.option("--slice", "slice_name", help="Put every imported case in this slice.")
@click.option("--slice-from", help="Take each case's slice from this field of the query's metadata (BEIR).")
@click.option("--negatives", is_flag=True, help="Also import queries without a relevant document, as negatives.")
@click.option("--allow-unknown-ids", is_flag=True, help="Import cases naming passages the corpus lacks.")
@click.option("--reviewer", default="", help="Recorded as the cases' reviewer.")
@json_option
@pass_ws
def import_cmd(ws: Workspace, path: Path, fmt: str, set_name: str | None, queries: Path | None,
               slice_name: str | None, slice_from: str | None, negatives: bool, allow_unknown_ids: bool,
               reviewer: str, as_json: bool) -> None:
    """Bring in a question set a team already has: each query becomes a case (source
    kind `import`) with its change-log entry. Grades 2-3 become primaries and 1
    secondaries (primaries where 1 is a query's top grade); 0 is dropped; grades are kept,
    so export -> import -> export gives the same qrels. A query whose id the set already
    has, or that names passages the corpus lacks, is skipped and listed (exit 3).

    \b
    Example:
        curator sets import beir/scifact --format beir --slice paraphrase
        curator sets import qrels.txt --format trec --queries topics.tsv --slice exact_identifier
        curator sets import qrels.json --format ranx --queries queries.tsv --slice paraphrase --set imported
        curator sets import export/ --format beir --slice-from slice --negatives --json
    """
    from curator.importsets import import_set

    result = import_set(ws, path, fmt, set_name=set_name, queries=queries, slice_name=slice_name,
                        slice_from=slice_from, negatives=negatives, allow_unknown_ids=allow_unknown_ids,
                        reviewer=reviewer)
    if as_json:
        print_json(result.to_dict())
    else:
        console.print(f"set [bold]{escape(result.set_name)}[/]: imported {len(result.imported)} case(s) "
                      f"from {escape(str(path))} ({fmt})")
        for line in result.skipped:
            err_console.print(f"  [yellow]skipped:[/] {escape(line)}", highlight=False)
    if result.skipped:
        sys.exit(EXIT_PARTIAL)
