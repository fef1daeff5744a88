"""`curator score`, `curator compare`, `curator history` and `curator baseline`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.markup import escape
from rich.table import Table

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json
from curator.cli.score_report import print_report, print_whole, value_text
from curator.cli.sets import check_sets, no_verify_option  # the verify gate (issue 19)
from curator.errors import EXIT_FAILED, EXIT_PARTIAL

if TYPE_CHECKING:
    from curator.scoring import Progress
    from curator.workspace import Workspace

SHOWN_METRICS = ("success", "recall", "mrr", "ndcg", "precision")


@cli.command()
@click.argument("run", type=click.Path(dir_okay=False, path_type=str), required=False)
@click.option("--set", "set_name", help="Question set (default: default_set in curator.toml).")
@click.option("--k", type=click.IntRange(1), help="Headline cut-off; scores at k and 3k. Default: [scoring] k.")
@click.option("--name", "label", help="Label appended to the artefact's file name.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "trec", "ranx"]), help="Run format (default: detected).")
@click.option("--rel-level", type=click.IntRange(1, 2), help="1: secondaries count as relevant; 2: primaries only.")
@click.option("--negative-threshold", type=float, help="A negative case fails if a result scores at or above this.")
@click.option("--gate", "gate_flags", multiple=True, metavar="GATE",
              help="METRIC>=MIN[:SLICE,...], METRIC<=MAX[:SLICE,...] (failures, failure_rate, stale_rate) or "
              "p50|p95|p99<=MS[:SLICE,...]; replaces the gates in curator.toml. Repeatable.")
@click.option("--no-gates", is_flag=True, help="Ignore the gates in curator.toml.")
@click.option("--no-write", is_flag=True, help="Do not store an artefact in runs/.")
@click.option("--worst", default=10, show_default=True, type=click.IntRange(0), help="Failures to list.")
@click.option("--rescore", "rescore_ref", metavar="RUN_ARTEFACT",
              help="Recompute a stored run with the set's current labels (no retriever); see docs/triage.md.")
@json_option
@no_verify_option
@pass_ws
def score(ws: Workspace, run: str | None, set_name: str | None, k: int | None, label: str | None, fmt: str | None,
          rel_level: int | None, negative_threshold: float | None, gate_flags: tuple[str, ...], no_gates: bool,
          no_write: bool, worst: int, rescore_ref: str | None, as_json: bool, no_verify: bool) -> None:
    """Score a retriever's run against a question set, store the artefact, check gates.

    RUN is JSONL (`{"query_id", "results": [{"id", "score", "revision"}], "latency_ms"}`),
    a TREC run file (`qid Q0 docno rank score tag`) or ranx JSON (`{qid: {doc: score}}`).
    Writes runs/<UTC time>-<git sha7>[-NAME].json. Exit 1 if a gate is red, 3 if lines
    of the run file were skipped, 0 otherwise.

    \b
    Example:
        curator score retriever-runs/bm25.jsonl
        curator score run.trec --set main --k 10 --name chunking-v2
        curator score run.jsonl --gate 'success@5>=0.8' --gate 'p95<=250' --json
        curator score run.jsonl --gate 'stale_rate<=0:freshness' --gate 'p95<=120:exact_identifier'
        curator score --rescore latest        # after triage added labels
    """
    from curator.errors import CuratorError
    from curator.scoring import score
    from curator.scoring.gates import parse_gate_flag

    check_sets(ws, [set_name or ws.config.default_set], no_verify)
    if (run is None) == (rescore_ref is None):
        raise click.UsageError("give a RUN file, or --rescore RUN_ARTEFACT (not both)")
    try:
        gates = [parse_gate_flag(g) for g in gate_flags] if gate_flags else ([] if no_gates else None)
    except CuratorError as exc:
        raise click.BadParameter(str(exc), param_hint="--gate") from None
    if run is None:
        from curator.triage import rescore

        result = rescore(ws, rescore_ref, write=not no_write, label=label)  # --name labels the rescore
    else:
        with _progress_bar(run, enabled=err_console.is_terminal and not as_json) as progress:
            result = score(ws.existing_set(set_name), run, fmt=fmt, k=k, rel_level=rel_level,
                           negative_threshold=negative_threshold, gates=gates, workspace=ws, label=label,
                           write=not no_write, progress=progress)
    art = result.artefact
    if as_json:
        summary = {key: art[key] for key in ("metrics", "latency_ms", "gates", "passed", "missing",
                                             "unknown_queries", "duplicates", "config", "set", "run")}
        summary["artefact"] = str(result.path) if result.path else None
        summary["failures"] = [{"query_id": q, **v} for q, v in result.failures()]
        if "source_run" in art:
            summary["source_run"] = art["source_run"]
        print_json(summary)
    else:
        print_report(ws, result, worst)
    if not result.passed:
        sys.exit(EXIT_FAILED)
    if result.problems:
        sys.exit(EXIT_PARTIAL)


@contextmanager
def _progress_bar(run: str, enabled: bool) -> Iterator[Progress | None]:
    """A bar on stderr: the run file's bytes read, then the questions scored. Redrawn only
    when scoring reports."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
               TextColumn("{task.fields[detail]}"), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, auto_refresh=False) as bar:
        tasks = {"read": bar.add_task(f"Reading {escape(run)}", total=None, detail=""),
                 "score": bar.add_task("Scoring", total=None, detail="", visible=False)}

        def update(stage: str, done: int, total: int) -> None:
            detail = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if stage == "read" else f"{done:,}/{total:,} questions"
            bar.update(tasks[stage], completed=done, total=total, detail=detail, visible=True)
            bar.refresh()

        yield update


@cli.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B", default="latest")
@click.option("--rank-threshold", default=3, show_default=True, type=click.IntRange(0),
              help="List questions whose first relevant rank moved by more than this.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 if a regression case (frozen, or tagged regression) broke.")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(0), help="Questions listed per group.")
@json_option
@pass_ws
def compare(ws: Workspace, a: str, b: str, rank_threshold: int, fail_on_regression: bool, limit: int, as_json: bool) -> None:
    """Compare two stored runs: per-slice deltas and which questions changed.

    A and B are artefact paths, names (or a unique part of one) in runs/, `latest`,
    `previous` or `latest~N`. B defaults to `latest`.

    \b
    Example:
        curator compare previous latest
        curator compare 20261129T101500Z-3f1c0a9 chunking-v2 --fail-on-regression
    """
    from curator.scoring.artefact import read_artefact, resolve_artefact
    from curator.scoring.compare import compare as compare_runs
    from curator.scoring.compare import frozen_query_ids

    art_a = read_artefact(resolve_artefact(ws.runs_dir, a))
    art_b = read_artefact(resolve_artefact(ws.runs_dir, b))
    set_name = art_b["set"].get("name") or ws.config.default_set
    frozen, problems = frozen_query_ids(ws.datasets_dir / set_name)
    diff = compare_runs(art_a, art_b, rank_threshold=rank_threshold, frozen=frozen)
    diff["frozen_problems"] = problems
    if as_json:
        print_json(diff)
    else:
        _print_compare(diff, limit)
    if fail_on_regression and diff["regressions"]:
        if not as_json:
            err_console.print(f"[bold red]{len(diff['regressions'])} regression cases broke:[/] "
                              + escape(", ".join(e["query_id"] for e in diff["regressions"])))
        sys.exit(EXIT_FAILED)


def _delta(value: float) -> str:
    if abs(value) < 5e-4:
        return "[dim]±0[/]"
    colour = "green" if value > 0 else "red"
    return f"[{colour}]{value:+.3f}[/]"


def _noise(cell: dict[str, Any]) -> str:
    if "p" not in cell or abs(cell["delta"]) < 5e-4:
        return ""
    return f" [bold]*[/] [dim]p={cell['p']:.3f}[/]" if cell["significant"] else f" [dim]~ p={cell['p']:.2f}[/]"


def _print_compare(diff: dict[str, Any], limit: int) -> None:
    for problem in diff["frozen_problems"]:
        err_console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    for warning in diff["warnings"]:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True)
    overall = diff["slices"]["overall"]["metrics"]
    ks = diff.get("k") or [5]
    wanted = [f"success@{ks[0]}", f"recall@{ks[0]}", *[f"recall@{k}" for k in ks[1:2]], f"mrr@{ks[0]}",
              f"ndcg@{ks[0]}", "negative_pass_rate"]
    names = [n for n in wanted if n in overall or any(n in s["metrics"] for s in diff["slices"].values())]
    if not [n for n in names if n != "negative_pass_rate"]:  # scored at different k: what both share
        names = [n for n in overall if "@" in n][:6] + names
    table = Table(title=f"{Path(diff['a']).name} → {Path(diff['b']).name}", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("slice", min_width=9)
    table.add_column("n", justify="right")
    for name in names:
        table.add_column("neg\npass" if name == "negative_pass_rate" else name.replace("@", "\n@"), justify="right")
    table.add_column("fail", justify="right")
    for slice_name, row in diff["slices"].items():
        cells = []
        for name in names:
            cell = row["metrics"].get(name)
            cells.append("–" if cell is None else f"{cell['b']:.3f}\n{_delta(cell['delta'])}{_noise(cell)}")
        fails = f"{row['failures_a']}→{row['failures_b']}"
        table.add_row(slice_name, str(row["n_b"]), *cells, fails, style="bold" if slice_name == "overall" else None)
    print_whole(table)
    n_overall = next((c.get("n_paired") for c in overall.values() if c.get("n_paired")), 0)
    console.print(f"[dim]* significant, ~ within noise: paired randomization test at alpha {diff.get('alpha', 0.05)} "
                  f"over the questions both runs scored ({n_overall} overall)[/]")

    def group(title: str, entries: list[dict], colour: str) -> None:
        if not entries:
            return
        console.print(f"[{colour}]{title} ({len(entries)})[/]")
        for e in entries[:limit]:
            flag = " [bold red](regression case)[/]" if e["regression"] and title.startswith("broken") else ""
            console.print(f"  {escape(e['query_id'])} [dim]{escape(e['slice'] or '')}[/]  "
                          f"rank {value_text(e['rank_a'])} → {value_text(e['rank_b'])}  "
                          f"{e['failure_a'] or 'ok'} → {e['failure_b'] or 'ok'}{flag}")
        if len(entries) > limit:
            console.print(f"  … {len(entries) - limit} more (--limit, --json)")

    group("fixed", diff["fixed"], "green")
    group("broken", diff["broken"], "red")
    group(f"rank moved by more than {diff['rank_threshold']}", diff["moved"], "yellow")
    if diff["added"] or diff["removed"]:
        console.print(f"[dim]{len(diff['added'])} questions only in B, {len(diff['removed'])} only in A[/]")
    if not (diff["fixed"] or diff["broken"] or diff["moved"]):
        console.print("no question changed outcome or moved rank beyond the threshold")


@cli.command()
@click.argument("query_id", required=False)
@click.option("--set", "set_name", help="Question set (default: default_set in curator.toml).")
@click.option("--metric", help="Metric per slice over time (default: success@<headline k>).")
@click.option("--last", default=30, show_default=True, type=click.IntRange(1), help="Most recent runs to show.")
@click.option("--name", "name_filter", help="Only runs with this --name (and their rescores).")
@click.option("--retriever", "retriever_filter", help="Only runs of this retriever (the artefact's retriever block).")
@json_option
@pass_ws
def history(ws: Workspace, query_id: str | None, set_name: str | None, metric: str | None, last: int,
            name_filter: str | None, retriever_filter: str | None, as_json: bool) -> None:
    """Scores over time: per-slice sparklines, or one question across all stored runs.

    \b
    Example:
        curator history                       # success@k per slice, one mark per run
        curator history --metric ndcg@10
        curator history dhl-weekday-cutoff    # first relevant rank in each run
    """
    from curator.errors import CuratorError
    from curator.scoring.history import load_runs, question_history, slice_history, sparkline

    name = set_name or ws.config.default_set
    runs, problems = load_runs(ws.runs_dir, name)
    for problem in problems:
        err_console.print(f"[yellow]skipped:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    if not runs:
        raise CuratorError(f"no stored runs of set {name!r} in {ws.runs_dir}", "Score one: `curator score RUN`.")
    runs = [r for r in runs if _keep_run(r, name_filter, retriever_filter)][-last:]
    if not runs:
        raise CuratorError(f"no stored run of set {name!r} matches --name/--retriever")
    if query_id:
        rows = question_history(runs, query_id)
        if not any(r["present"] for r in rows):
            raise CuratorError(f"{query_id!r} is in none of the {len(runs)} stored runs of set {name!r}")
        if as_json:
            print_json({"query_id": query_id, "runs": rows})
            return
        table = Table(title=f"{query_id}: first relevant rank per run")
        for column in ("run", "label", "rev", "first rel", "failure", "ranks"):
            table.add_column(column)
        for r in rows:
            if not r["present"]:
                table.add_row(r["artefact"], r["label"] or "", "", "[dim]not in run[/]", "", "")
                continue
            ranks = ", ".join(f"{d}@{k if k else '–'}" for d, k in (r["ranks"] or {}).items())
            fail = f"[red]{r['failure']}[/]" if r["failure"] else "[green]ok[/]"
            table.add_row(r["artefact"], r["label"] or "", str(r["rev"]), value_text(r["first_relevant_rank"]), fail, escape(ranks))
        console.print(table)
        return
    metric = metric or f"success@{runs[-1]['config']['headline_k']}"
    data = slice_history(runs, metric)
    if all(v is None for values in data["slices"].values() for v in values):
        raise CuratorError(f"no stored run of set {name!r} has {metric!r}", "Pick one with --metric (e.g. success@5).")
    if as_json:
        print_json(data)
        return
    table = Table(title=f"{metric} per slice over {len(runs)} runs ({runs[0]['created_at']} → {runs[-1]['created_at']})")
    for column in ("slice", "trend", "first", "last", "min", "max"):
        table.add_column(column, justify="right" if column not in ("slice", "trend") else "left")
    for slice_name, values in data["slices"].items():
        present = [v for v in values if v is not None]
        if not present:
            continue
        scale = (0.0, max(1.0, max(present))) if metric in ("failures", "stale") else (0.0, 1.0)  # counts: own scale
        table.add_row(slice_name, sparkline(values, *scale), value_text(present[0]), value_text(present[-1]), value_text(min(present)),
                      value_text(max(present)), style="bold" if slice_name == "overall" else None)
    console.print(table)


def _keep_run(run: dict[str, Any], name: str | None, retriever: str | None) -> bool:
    if name is not None and name not in (run.get("label"), (run.get("source_run") or {}).get("label")):
        return False
    if retriever is not None:
        block = run.get("retriever") or {}
        if retriever not in (block.get("name"), block.get("adapter"), block.get("kind")):
            return False
    return True


@cli.command()
@click.option("--set", "set_name", help="Question set (default: default_set in curator.toml).")
@click.option("--out", "out", default="retriever-runs/bm25.jsonl", show_default=True,
              type=click.Path(dir_okay=False), help="Run file to write (JSONL).")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1), help="Results per query.")
@no_verify_option
@click.pass_context
def baseline(ctx: click.Context, set_name: str | None, out: str, limit: int, no_verify: bool) -> None:
    """Write a baseline run: the workspace's own BM25 search for every active case
    (an alias of `curator run baseline --no-score`).

    Score it like any retriever's run; a retriever that does not beat it needs work.

    \b
    Example:
        curator baseline && curator score retriever-runs/bm25.jsonl --name bm25
    """
    from curator.cli.run import run

    ctx.invoke(run, retriever="baseline", set_name=set_name, out=out, k=limit, no_score=True, no_verify=no_verify)
