"""`curator corpus add|embed|search|show|list`."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json
from curator.errors import EXIT_PARTIAL

if TYPE_CHECKING:
    from curator.models import ImportReport
    from curator.suggest.dense import IndexReport
    from curator.workspace import Workspace


@cli.group()
def corpus() -> None:
    """Import and search the passages that questions are labelled with."""


@corpus.command("add")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--history", is_flag=True, help="Also import every past git revision of the files.")
@click.option("--prefix", default="", help="Put this before every passage id (e.g. 'docs/').")
@click.option("--base", type=click.Path(file_okay=False, path_type=Path),
              help="Make ids relative to this folder (default: the folder given, or the file's folder).")
@json_option
@pass_ws
def corpus_add(ws: Workspace, paths: tuple[Path, ...], history: bool, prefix: str, base: Path | None, as_json: bool) -> None:
    """Import documents (Markdown, text, reStructuredText, HTML) or corpus files.

    Documents are chunked on headings; passage ids are `relative/path.md#heading-slug`.
    JSONL files keep your own ids: passages (`id`, `text`), BEIR corpus.jsonl (`_id`),
    or document revisions (`path`, `revision`, `committed_at`, `text`). Inside a git work
    tree a passage's revision is the last commit of its file. Re-importing unchanged
    files changes nothing. Exits 3 if some input was skipped (each one is listed).

    \b
    Example:
        curator corpus add docs/ runbooks/
        curator corpus add docs/ --history       # every past git revision too
        curator corpus add beir/corpus.jsonl
    """
    from curator.corpus import add_paths
    from curator.corpus.migrate import needs_upgrade

    if needs_upgrade(ws):
        _upgrade(ws, as_json)
    with Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TextColumn("[dim]{task.completed} files"),
        TimeElapsedColumn(), console=err_console, transient=True, disable=as_json or not sys.stderr.isatty(),
    ) as bar:
        task = bar.add_task("Importing", total=None)

        def progress(name: str) -> None:
            bar.update(task, advance=1, description=f"Importing {escape(name[-60:])}")

        report = add_paths(ws, paths, history=history, prefix=prefix, base=base, progress=progress)
    _embed_new_passages(ws, as_json)  # [suggest] dense: only texts without a vector yet
    stats = ws.corpus_stats()
    if as_json:
        skipped = [{"path": p, "line": n, "reason": r} for p, n, r in report.skipped]
        print_json({**asdict(report), "skipped": skipped, "corpus": asdict(stats)})
    else:
        console.print(_summary(report))
        console.print(f"Corpus: {stats.documents} documents, {stats.passages} current passages.")
        for path, line, reason in report.skipped:
            where = f"{path}:{line}" if line else path
            err_console.print(f"[yellow]skipped[/] {escape(where)}: {escape(reason)}", highlight=False)
    if report.skipped:
        if not as_json:
            err_console.print(f"[yellow]{len(report.skipped)} input(s) skipped[/] (exit code {EXIT_PARTIAL}).")
        sys.exit(EXIT_PARTIAL)


def _summary(report: ImportReport) -> str:
    """One plain line: what is new, what became history, what was there already."""
    updated = report.revisions_added - report.documents_new - report.history_revisions
    done = [f"{n} {what}" for n, what in ((report.documents_new, "new documents"), (updated, "updated documents"),
                                        (report.history_revisions, "older revisions as history")) if n]
    line = f"Imported {', '.join(done) or 'nothing new'}: {report.passages_added} passages."
    if report.documents_unchanged:  # files stored at this revision before this import
        line += f" {report.documents_unchanged} files were at a revision already imported."
    return line


def _embed_new_passages(ws: Workspace, quiet: bool) -> IndexReport | None:
    """Embed the passages that have no vector of the configured model yet (issue 20)."""
    from rich.progress import BarColumn, MofNCompleteColumn

    from curator.suggest.dense import embedder_for, index_corpus

    embedder = embedder_for(ws.config)
    if embedder is None:
        return None
    with Progress(TextColumn("Embedding"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err_console, transient=True, disable=quiet or not sys.stderr.isatty()) as bar:
        task = bar.add_task("Embedding", total=None)
        report = index_corpus(ws, embedder, ws.config.suggest.batch_size,
                              progress=lambda done, total: bar.update(task, completed=done, total=total))
    if not quiet:
        console.print(f"Embedded {report.embedded} passage texts with {escape(embedder.name)} "
                      f"({report.cached} already had a vector).")
    return report


@corpus.command("embed")
@json_option
@pass_ws
def corpus_embed(ws: Workspace, as_json: bool) -> None:
    """Embed the current passages that have no vector of the dense model yet.

    `corpus add` does this after every import; run it after turning `[suggest] dense` on
    (or changing `embedding_model`) for a corpus imported before. Vectors are cached by
    the text's SHA-256 and the model, so a second run embeds nothing.

    \b
    Example:
        curator corpus embed
        curator corpus embed --json
    """
    from curator.errors import CuratorError
    from curator.suggest.dense import embedder_for

    if embedder_for(ws.config) is None:
        raise CuratorError("no dense retriever is configured ([suggest] dense = \"none\")",
                           "Set [suggest] dense and embedding_model in curator.toml (docs/configuration.md).")
    report = _embed_new_passages(ws, as_json)
    if as_json and report is not None:
        print_json(asdict(report))


@corpus.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--limit", default=10, show_default=True, help="How many passages to show.")
@json_option
@pass_ws
def corpus_search(ws: Workspace, query: tuple[str, ...], limit: int, as_json: bool) -> None:
    """Full-text search (BM25) over current passages.

    \b
    Example:
        curator corpus search dhl cutoff time
        curator corpus search CARRIER-E1042 --json
    """
    from curator.workspace import HL_END, HL_START

    hits = ws.search(" ".join(query), limit=limit)
    if as_json:
        print_json([{**h.model_dump(), "snippet": h.snippet.replace(HL_START, "").replace(HL_END, "")}
                    for h in hits])
        return
    if not hits:
        console.print("No passage matches.")
        return
    table = Table(show_lines=True)
    table.add_column("#", justify="right")
    table.add_column("passage")
    table.add_column("snippet", ratio=1)
    table.add_column("score", justify="right")
    for i, hit in enumerate(hits, 1):
        snippet = escape(hit.snippet).replace(HL_START, "[bold yellow]").replace(HL_END, "[/]")
        where = f"[bold]{escape(hit.id)}[/]\n[dim]{escape(' › '.join(hit.heading_path))}\n@{hit.revision[:12]}[/]"
        table.add_row(str(i), where, snippet, f"{hit.score:.2f}")
    console.print(table)


@corpus.command("show")
@click.argument("passage_id")
@click.option("--revision", help="A stored revision (default: the current one).")
@click.option("--revisions", "list_revisions", is_flag=True, help="List every stored revision.")
@json_option
@pass_ws
def corpus_show(ws: Workspace, passage_id: str, revision: str | None, list_revisions: bool, as_json: bool) -> None:
    """Print one passage's text and metadata.

    \b
    Example:
        curator corpus show 'carriers/dhl.md#cutoff-times' --revisions
    """
    from curator.errors import CuratorError

    if list_revisions:
        revisions = ws.revisions_of(passage_id)
        if not revisions:
            raise CuratorError(f"no passage {passage_id!r} in the corpus", "Find ids with `curator corpus search`.")
        if as_json:
            print_json([{"revision": r, "committed_at": t, "current": c} for r, t, c in revisions])
        else:
            for rev, when, current in revisions:
                console.print(f"{rev}  {when or '-'}  {'[green]current[/]' if current else ''}")
        return
    passage = ws.passage(passage_id, revision)
    if passage is None:
        raise CuratorError(f"no passage {passage_id!r} in the corpus", "Find ids with `curator corpus search`.")
    if as_json:
        print_json(passage.model_dump())
        return
    console.print(f"[bold]{escape(passage.id)}[/]  @{passage.revision}  {passage.committed_at or ''}"
                  f"{'' if passage.is_current else '  [yellow](not current)[/]'}")
    console.print(f"[dim]{escape(passage.heading)}[/]\n")
    console.print(escape(passage.text), highlight=False)


@corpus.command("list")
@click.argument("path", required=False, default="")
@click.option("--history", is_flag=True, help="Also list ids that exist only in older revisions.")
@json_option
@pass_ws
def corpus_list(ws: Workspace, path: str, history: bool, as_json: bool) -> None:
    """List passage ids with their document, revision and whether they are current.

    PATH limits the list to documents whose id starts with it (a file or a folder).
    With --history every stored revision of every passage is listed, so you can see
    which ids a change removed or added.

    \b
    Example:
        curator corpus list runbooks/etcd/
        curator corpus list runbooks/etcd/etcdNoLeader.md --history
        curator corpus list --history --json | jq '.[] | select(.current | not) | .id'
    """
    rows = ws.passage_listing(path, history=history)
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print(f"No passages{f' under {escape(path)}' if path else ''}.")
        return
    table = Table()
    table.add_column("passage", overflow="fold")
    table.add_column("revision")
    table.add_column("committed")
    table.add_column("")
    for row in rows:
        state = "[green]current[/]" if row["current"] else "[yellow]history[/]"
        table.add_row(escape(row["id"]), row["revision"][:12], row["committed_at"] or "-", state)
    console.print(table)
    current = sum(1 for row in rows if row["current"])
    console.print(f"{current} current, {len(rows) - current} older passage revisions.")


@corpus.command("upgrade")
@json_option
@pass_ws
def corpus_upgrade(ws: Workspace, as_json: bool) -> None:
    """Re-cut the stored corpus with this curator's chunker and relabel cases whose ids changed.

    A workspace imported by an older curator keeps its passage ids until this runs
    (`corpus add` runs it first by itself). Each case labelled with an id that changed
    gets a `relabel` revision with reason `id change`; older revisions are mapped too.

    \b
    Example:
        curator corpus upgrade
        curator corpus upgrade --json
    """
    _upgrade(ws, as_json)


def _upgrade(ws: Workspace, as_json: bool) -> None:
    from curator.corpus.migrate import upgrade_ids

    with err_console.status("Re-cutting stored documents with the current chunker", spinner="dots"):
        result = upgrade_ids(ws)
    if as_json:
        if click.get_current_context().info_name == "upgrade":
            print_json({"revisions": result.revisions, "changed": result.changed, "mapping": result.mapping,
                        "relabelled": [{"set": s, "query_id": q} for s, q in result.relabelled]})
        return
    console.print(f"Passage ids: {result.revisions} document revisions re-cut, {result.changed} with new ids, "
                  f"{len(result.mapping)} ids renamed, {len(result.relabelled)} cases relabelled (reason 'id change').")
