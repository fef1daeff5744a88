"""`curator run`: query a live retriever for every active case, write the run, score it."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json, rel
from curator.cli.sets import check_sets, no_verify_option
from curator.errors import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_PARTIAL, CuratorError

if TYPE_CHECKING:
    from curator.harness.adapters import RetrieverSpec
    from curator.workspace import Workspace


def _spec(ws: Workspace, name: str | None, options: dict[str, Any]) -> RetrieverSpec:
    from curator.harness.adapters import RetrieverSpec

    given = {key: value for key, value in options.items() if value not in (None, ())}
    if "headers" in given:
        headers = {}
        for item in given["headers"]:
            key, sep, value = item.partition(":")
            if not sep:
                raise click.BadParameter(f"{item!r}: expected 'Name: value' (use $VAR for secrets)", param_hint="--header")
            headers[key.strip()] = value.strip()
        given["headers"] = headers
    configured = ws.config.retrievers
    if name is not None and name in configured:
        data = {**configured[name], **given}
    elif name is not None and name in ("baseline", "bm25"):
        data = {"kind": "baseline", **given}
        name = "bm25"  # as `curator baseline`: retriever-runs/bm25.jsonl, label bm25
    elif name is not None and not given:
        known = ", ".join(sorted(configured)) or "none"
        raise CuratorError(f"no retriever {name!r} in [retrievers] of curator.toml (configured: {known})",
                           "Add [retrievers.NAME] (docs/harness.md) or give --kind/--url on the command line.")
    else:
        data = given
    if name is None and data.get("kind") == "baseline":
        name = "bm25"
    return RetrieverSpec.from_dict(name or str(data.get("kind", "cli")), data)


@cli.command("run")
@click.argument("retriever", required=False)
@click.option("--set", "set_name", help="Question set (default: default_set in curator.toml).")
@click.option("--kind", type=click.Choice(["http", "python", "command", "baseline"]), help="Adapter (overrides toml).")
@click.option("--url", help="http: URL template with {query} (URL-encoded) and {k}.")
@click.option("--method", help="http: GET or POST (default POST).")
@click.option("--body", help="http: JSON body template with {query} (JSON-escaped) and {k}.")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'",
              help="http header; $VAR reads an environment variable (never stored). Repeatable.")
@click.option("--hits", help="http: dotted path to the list of hits (e.g. hits.hits).")
@click.option("--id", "id_path", help="Dotted path of a hit's id (default id).")
@click.option("--score", "score_path", help="Dotted path of a hit's score.")
@click.option("--revision", "revision_path", help="Dotted path of a hit's revision.")
@click.option("--function", help="python: package.module:function(query, k).")
@click.option("--command", "command_line", help="command: program reading JSONL queries, writing JSONL results.")
@click.option("--proxy", help="http: proxy URL ($VAR for credentials); else HTTP(S)_PROXY/NO_PROXY apply.")
@click.option("--timeout", type=click.FloatRange(min=0.001), help="Seconds per request (default 10).")
@click.option("--retries", type=click.IntRange(0), help="Extra tries after a failed request (default 1).")
@click.option("--k", "k", default=20, show_default=True, type=click.IntRange(1), help="Results asked per query.")
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(1, 256),
              help="Requests in flight; 1 keeps each latency the retriever's alone.")
@click.option("--warmup", default=0, show_default=True, type=click.IntRange(0), help="Requests first, not timed or written.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Recorded in the artefact's retriever block (model=e5-large). Repeatable.")
@click.option("--out", type=click.Path(dir_okay=False), help="Run file (default retriever-runs/<name>.jsonl).")
@click.option("--name", "label", help="Artefact label (default: the retriever's name).")
@click.option("--no-score", is_flag=True, help="Only write the run file.")
@no_verify_option
@json_option
@pass_ws
def run(ws: Workspace, retriever: str | None, set_name: str | None, kind: str | None, url: str | None,
        method: str | None, body: str | None, headers: tuple[str, ...], hits: str | None, id_path: str | None,
        score_path: str | None, revision_path: str | None, function: str | None, command_line: str | None,
        proxy: str | None, timeout: float | None, retries: int | None, k: int, concurrency: int, warmup: int,
        params: tuple[str, ...], out: str | None, label: str | None, no_score: bool, no_verify: bool,
        as_json: bool) -> None:
    """Query a retriever for every active case of a set, write the run and score it.

    RETRIEVER names a [retrievers.NAME] table of curator.toml, or `baseline` (curator's
    own BM25); options override its keys. Exit 130 on Ctrl-C (what was answered is
    written), 1 if a gate is red, 3 if requests failed. A run whose every request failed
    is written but not scored (an outage is no measurement). The set must pass `curator
    verify` first (--no-verify to go ahead anyway).

    \b
    Example:
        curator run es
        curator run es --concurrency 8 --warmup 5 --param model=e5-large
        curator run --kind http --url 'http://127.0.0.1:8983/solr/docs/select?q={query}&rows={k}' \\
            --method GET --hits response.docs --id id --score score
        curator run baseline --no-score
    """
    from curator.harness import build_adapter, run_retriever
    from curator.scoring import score
    from curator.scoring.artefact import write_artefact

    options = {"kind": kind, "url": url, "method": method, "body": body, "headers": headers, "hits": hits,
               "id": id_path, "score": score_path, "revision": revision_path, "function": function,
               "command": command_line, "proxy": proxy, "timeout": timeout, "retries": retries}
    spec = _spec(ws, retriever, options)
    extra: dict[str, str] = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r}: expected KEY=VALUE", param_hint="--param")
        extra[key] = value
    qs = ws.existing_set(set_name)
    check_sets(ws, [qs.name], no_verify)
    cases = [c for c in qs.read().cases.values() if c.status == "active"]
    path = Path(out) if out else ws.root / "retriever-runs" / f"{spec.name}.jsonl"
    adapter = build_adapter(spec, ws, concurrency)
    show = err_console.is_terminal and not as_json
    outcome = _with_bar(show, lambda progress: run_retriever(
        adapter, cases, path, k=k, concurrency=concurrency, retries=spec.retries, warmup=warmup,
        progress=progress), len(cases))
    retriever_block = {**spec.settings(), "k": k, "concurrency": concurrency, "warmup": warmup, "params": extra,
                       "requests": outcome.done, "failed": len(outcome.failed), "wall_s": round(outcome.wall_s, 3)}
    summary: dict[str, Any] = {"run": str(path), "queries": outcome.done, "of": outcome.total,
                               "failed": outcome.failed, "interrupted": outcome.interrupted,
                               "retriever": retriever_block}
    if not as_json:
        console.print(f"wrote {outcome.done} of {outcome.total} queries to {escape(rel(path, ws.root))}"
                      + (f" ([red]{len(outcome.failed)} failed[/])" if outcome.failed else ""))
    if outcome.interrupted:
        if as_json:
            print_json(summary)
        err_console.print("[yellow]interrupted: the answered queries were written, nothing scored[/]")
        sys.exit(EXIT_INTERRUPTED)
    passed = True
    if outcome.failed and len(outcome.failed) == outcome.done and not no_score:
        # Every request failed: the retriever is down or misconfigured. Scoring would store
        # zeros in runs/ and drag `history` down for an outage, so the run is only written.
        where = retriever_block.get("url") or spec.function or spec.command or spec.kind
        err_console.print(f"[red]every request failed[/] (first: {escape(_first_error(path))}); not scored: "
                          f"check the retriever ({escape(str(where))})")
        summary["not_scored"] = "every request failed"
        no_score = True
    if not no_score:
        result = score(qs, path, fmt="jsonl", k=None, workspace=ws, label=label or spec.name, write=False)
        result.artefact["retriever"] = retriever_block
        result.path = write_artefact(ws.runs_dir, result.artefact)
        passed = result.passed
        summary.update(artefact=str(result.path), metrics=result.overall, passed=result.passed,
                       gates=result.gates)
        if not as_json:
            from curator.cli.score_report import print_report

            print_report(ws, result, 10)
    if as_json:
        print_json(summary)
    if not passed:
        sys.exit(EXIT_FAILED)
    if outcome.failed:
        sys.exit(EXIT_PARTIAL)


def _first_error(path: Path) -> str:
    import json

    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "error" in record:
            return str(record["error"])
    return ""


def _with_bar(show: bool, work: Any, total: int) -> Any:
    if not show:
        return work(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from curator.harness.runner import percentile

    columns = (TextColumn("Querying"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[detail]}"),
               TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task("run", total=total, detail="")
        next_detail = [0.0]

        def update(done: int, total: int, latencies: list[float]) -> None:
            # The running p50/p95 sort every latency so far: at most 4 times a second (the
            # bar redraws 10 times), not every few requests, which cost ~0.1 ms a request
            # at 10,000 queries on the event loop.
            now = time.monotonic()
            if latencies and (now >= next_detail[0] or done == total):
                next_detail[0] = now + 0.25
                detail = f"p50 {percentile(latencies, 50):.1f} ms  p95 {percentile(latencies, 95):.1f} ms"
                bar.update(task, completed=done, detail=detail)
            else:
                bar.update(task, completed=done)

        return work(update)
