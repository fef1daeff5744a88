"""`curator export` (formats, filters, `--freeze`) and `curator freezes`."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
from rich.markup import escape

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json, rel
from curator.cli.sets import check_sets, no_verify_option
from curator.errors import EXIT_FAILED, EXIT_PARTIAL

if TYPE_CHECKING:
    from curator.workspace import Workspace

FORMATS = ("jsonl", "beir", "trec", "ranx", "ir_measures")


@cli.command()
@click.argument("set_name", required=False, metavar="[SET]")
@click.option("-f", "--format", "fmt", type=click.Choice(FORMATS), help="Output format.")
@click.option("-o", "--out", type=click.Path(path_type=str), help="File (jsonl, ranx, ir_measures) or folder (beir, trec).")
@click.option("--slice", "slices", multiple=True, help="Only cases of this slice (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Only cases with this tag (repeatable: any of them).")
@click.option("--status", type=click.Choice(["active", "retired", "all"]), default="active", show_default=True)
@click.option("--as-of", "as_of", metavar="REV_OR_DATE",
              help="The set as it was: a line count, a date/time, a freeze, or a git commit.")
@click.option("--with-corpus", is_flag=True, help="beir: also write corpus.jsonl from the workspace corpus.")
@click.option("--freeze", "freeze_tag", metavar="TAG",
              help="Freeze the active cases with this tag (usually `regression`) instead of exporting.")
@click.option("--name", help="Freeze name (default: the tag); earlier freezes of this name are kept.")
@click.option("--all", "all_active", is_flag=True, help="With --freeze: every active case, whatever its tags.")
@no_verify_option
@json_option
@pass_ws
def export(
    ws: Workspace, set_name: str | None, fmt: str | None, out: str | None, slices: tuple[str, ...],
    tags: tuple[str, ...], status: str, as_of: str | None, with_corpus: bool, freeze_tag: str | None,
    name: str | None, all_active: bool, no_verify: bool, as_json: bool,
) -> None:
    """Export a question set for other evaluators, or freeze its regression subset.

    Negative cases go where the format can carry them, else into negatives.jsonl beside
    the export with a warning. Exits 3 if some cases could not be written (listed).

    \b
    Example:
        curator export --format beir --out eval/beir --with-corpus
        curator export main --format trec --out eval/trec --slice freshness
        curator export --format ranx --out qrels.json --as-of 2026-11-01
        curator export --freeze regression          # frozen/regression-<YYYYMMDD>.jsonl
        curator export --freeze regression --all --name everything
    """
    check_sets(ws, [ws.existing_set(set_name).name], no_verify)
    if freeze_tag or all_active or name:
        if not freeze_tag:
            raise click.UsageError("--name and --all only go with --freeze TAG")
        clash = [flag for flag, given in (("--format", fmt), ("--out", out), ("--slice", slices),
                 ("--tag", tags), ("--as-of", as_of), ("--with-corpus", with_corpus),
                 ("--status", status != "active")) if given]
        if clash:
            raise click.UsageError(f"--freeze takes no {', '.join(clash)}: a freeze holds the whole tagged subset")
        from curator.freeze import freeze

        frozen = freeze(ws, set_name, tag=freeze_tag, name=name, all_active=all_active)
        if as_json:
            print_json(frozen.to_dict())
            return
        per_slice = ", ".join(f"{k} {v}" for k, v in frozen.manifest["count_per_slice"].items())
        console.print(f"Froze [bold]{frozen.manifest['cases']}[/] case(s) into "
                      f"{escape(rel(frozen.path, ws.root))} ({escape(per_slice) or 'empty'})")
        console.print(f"manifest: {escape(rel(frozen.manifest_path, ws.root))}")
        if frozen.carried_retired:
            err_console.print(f"[yellow]kept as frozen, retired since:[/] {', '.join(frozen.carried_retired)}")
        if frozen.carried_untagged:
            err_console.print(f"[yellow]kept, no longer tagged {freeze_tag}:[/] "
                              f"{', '.join(frozen.carried_untagged)}")
        if frozen.manifest["git"].get("dirty"):
            err_console.print("[yellow]note:[/] the workspace has uncommitted changes (recorded as dirty)")
        return

    if not fmt or not out:
        raise click.UsageError("give --format and --out (or --freeze TAG)")
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from curator.export import Selection
    from curator.export import export as run_export

    selection = Selection(slices=slices, tags=tags, status=status, as_of=as_of)
    with Progress(SpinnerColumn(), TextColumn("writing corpus.jsonl: {task.completed} passages"),
                  TimeElapsedColumn(), console=err_console, transient=True,
                  disable=as_json or not with_corpus or not sys.stderr.isatty()) as bar:
        task = bar.add_task("corpus", total=None)
        result = run_export(ws, set_name, fmt, out, selection=selection, with_corpus=with_corpus,
                            progress=lambda n: bar.advance(task, n))
    if as_json:
        print_json(result.to_dict())
    else:
        when = f" as of {result.as_of}" if result.as_of else ""
        console.print(f"Exported [bold]{result.cases}[/] case(s), {result.qrels} judgement(s){escape(when)} "
                      f"as {fmt}:")
        for path in result.files:
            console.print(f"  {escape(str(path))}")
        for warning in result.warnings:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
        for skipped in result.skipped:
            err_console.print(f"[red]skipped:[/] {escape(skipped)}", highlight=False)
    if result.partial:
        sys.exit(EXIT_PARTIAL)


@cli.command()
@click.argument("set_name", required=False, metavar="[SET]")
@json_option
@pass_ws
def freezes(ws: Workspace, set_name: str | None, as_json: bool) -> None:
    """List a set's freezes with their counts and whether they still verify.

    Exits 1 if any freeze fails its checks (the same checks `curator verify` runs).

    \b
    Example:
        curator freezes
        curator freezes main --json
    """
    from curator.freeze import list_freezes

    infos = list_freezes(ws, set_name)
    if as_json:
        print_json([info.to_dict() for info in infos])
    elif not infos:
        console.print("No freezes yet. Make one with `curator export --freeze regression`.")
    else:
        from rich.table import Table

        table = Table(box=None, pad_edge=False)
        for column in ("freeze", "created", "cases", "per slice", "git", "status"):
            table.add_column(column)
        for info in infos:
            row = info.to_dict()
            git = row["git"] or {}
            commit = (git.get("commit") or "-")[:10] + (" dirty" if git.get("dirty") else "")
            per_slice = ", ".join(f"{k} {v}" for k, v in row["count_per_slice"].items())
            mark = "[green]ok[/]" if info.ok else "[bold red]FAILED[/]"
            label = info.manifest_path.stem if info.manifest else info.manifest_path.name
            table.add_row(escape(label), row["created_at"] or "-", str(row["cases"] or "-"),
                          escape(per_slice), commit, mark)
        console.print(table)
        for info in infos:
            for problem in info.problems:
                err_console.print(f"  [red]error:[/] {escape(str(problem))}", highlight=False)
    if any(not info.ok for info in infos):
        sys.exit(EXIT_FAILED)
