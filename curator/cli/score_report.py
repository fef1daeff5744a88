"""What `curator score` and `curator run` print: the per-slice table (each value with its
95% interval beneath it), latency, failed and missing queries, the worst failures and the
gate verdicts. Also the table helpers `compare` and `history` share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich import box
from rich.markup import escape
from rich.table import Table

from curator.cli.main import console, err_console, rel

if TYPE_CHECKING:
    from curator.scoring import ScoreResult
    from curator.workspace import Workspace


def _interval(bounds: list[float] | None) -> str:
    """A 95% interval as `0.33–1.00`."""
    return "" if not bounds else f"{bounds[0]:.2f}–{bounds[1]:.2f}"


def value_text(value: Any) -> str:
    """A table cell: `–` for none, floats to three places."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _score_table(ws: Workspace, art: dict[str, Any], *, with_ci: bool) -> Table:
    """The per-slice table; with `with_ci` a dim row under each slice gives the 95%
    interval of each value (a 0.17 swing on 6 cases shows as the wide interval it is)."""
    k_list = art["config"]["k"]
    head = art["config"]["headline_k"]
    table = Table(title=f"set {art['set']['name']} · {art['set']['cases']} cases · "
                  f"run {escape(rel(art['run']['path'], ws.root))}", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("slice", min_width=9)
    table.add_column("n", justify="right")
    columns = [f"success@{head}"] + [f"recall@{k}" for k in k_list] + [f"mrr@{head}", f"ndcg@{head}"]
    for column in columns:
        table.add_column(column.replace("@", "\n@"), justify="right")
    table.add_column("neg\npass", justify="right")
    table.add_column("fail", justify="right")
    table.add_column("gate")
    verdicts_by_slice: dict[str, list[dict]] = {}
    for v in art["gates"]:
        verdicts_by_slice.setdefault(v["slice"], []).append(v)
    metrics = art["metrics"]
    for name, block in [*metrics["slices"].items(), ("overall", metrics["overall"])]:
        verdicts = verdicts_by_slice.get(name, [])
        gate = "" if not verdicts else ("[green]pass[/]" if all(v["passed"] for v in verdicts) else "[bold red]FAIL[/]")
        style = "bold" if name == "overall" else None
        table.add_row(name, str(block["n"]), *[value_text(block.get(c)) for c in columns],
                      value_text(block.get("negative_pass_rate")), str(block["failures"]), gate, style=style)
        ci = block.get("ci") or {}
        if with_ci and ci:
            table.add_row("  95% CI", "", *[_interval(ci.get(c)) for c in columns],
                          _interval(ci.get("negative_pass_rate")), "", "", style="dim")
    return table


def _natural_width(table: Table) -> int:
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update(width=10_000), table).maximum


def print_whole(table: Table) -> None:
    """A terminal wraps the table to fit; a pipe or CI log gets its natural width, so no
    number is ever cut to an ellipsis."""
    if console.is_terminal:
        console.print(table)
        return
    needed = _natural_width(table)
    width = console.width
    console.width = max(width, needed)
    try:
        console.print(table)
    finally:
        console.width = width


def print_report(ws: Workspace, result: ScoreResult, worst: int) -> None:
    from curator.scoring.evaluate import SEVERITY
    from curator.scoring.gates import describe

    art = result.artefact
    for problem in art["set"].get("problems", []):
        err_console.print(f"[yellow]set:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    for problem in art["run"]["problems"][:20]:
        err_console.print(f"[yellow]skipped:[/] {escape(problem)}", highlight=False, soft_wrap=True)
    if len(art["run"]["problems"]) > 20:
        err_console.print(f"[yellow]… and {len(art['run']['problems']) - 20} more skipped lines[/]")
    table = _score_table(ws, art, with_ci=True)
    if console.is_terminal and _natural_width(table) > console.width:
        table = _score_table(ws, art, with_ci=False)  # a narrow terminal: values, never ellipses
        console.print(table)
        console.print("[dim]95% intervals left out at this terminal width (a wider one, a pipe or --json has them)[/]")
    else:
        # a CI log is not a terminal: the table takes its natural width, never an ellipsis
        print_whole(table)
        resamples = art["config"].get("bootstrap", {}).get("resamples")
        if resamples:
            console.print(f"[dim]95% CI: percentile bootstrap over the slice's queries ({resamples:,} resamples, "
                          "seeded); gates judge the value itself, the interval says how far to trust it[/]")
    lat = art["latency_ms"]
    if lat["n"]:
        of = lat.get("of", lat["n"])
        console.print(f"latency over {lat['n']} of {of} queries: p50 {lat['p50']:.1f} ms, "
                      f"p95 {lat['p95']:.1f} ms" + (f", p99 {lat['p99']:.1f} ms" if lat.get("p99") is not None else ""))
    if art.get("failed"):
        console.print(f"[red]{len(art['failed'])} requests failed (scored 0):[/] "
                      + escape(", ".join(art["failed"][:10])) + (" …" if len(art["failed"]) > 10 else ""))
    if art["missing"]:
        console.print(f"[yellow]{len(art['missing'])} cases missing from the run (scored 0):[/] "
                      + escape(", ".join(art["missing"][:10])) + (" …" if len(art["missing"]) > 10 else ""))
    if art["unknown_queries"]:
        console.print(f"[dim]{len(art['unknown_queries'])} queries in the run are not active cases of the set; ignored[/]")
    if art["duplicates"]:
        console.print(f"[yellow]{len(art['duplicates'])} queries list a result twice; the first rank was kept[/]")
    failures = result.failures()
    if failures and worst:
        failures.sort(key=lambda item: (SEVERITY.get(item[1]["failure"], 9), item[0]))
        shown = min(worst, len(failures))
        console.print(f"[bold]failures[/] ({len(failures)}; showing {shown})")
        for qid, q in failures[:worst]:
            expected = ", ".join(f"{d} @{r if r else '–'}" for d, r in q["ranks"].items()) or "nothing"
            got = ", ".join(t["id"] + (f" [{t['label']}]" if t.get("label") else "") for t in q["top"][:3])
            console.print(f"  [red]{q['failure']}[/] [bold]{escape(qid)}[/] [dim]({escape(q['slice'])}, "
                          f"first relevant rank {value_text(q.get('first_relevant_rank'))})[/]", highlight=False, soft_wrap=True)
            console.print(f"      expected: {escape(expected)}", highlight=False, soft_wrap=True)
            console.print(f"      got:      {escape(got or '(empty)')}", highlight=False, soft_wrap=True)
    for v in art["gates"]:
        mark = "[green]pass[/]" if v["passed"] else "[bold red]FAIL[/]"
        console.print(f"gate {mark}  {escape(describe(v))}")
    if result.path:
        console.print(f"artefact: {escape(rel(result.path, ws.root))}")
    if art["gates"]:
        red = sum(1 for v in art["gates"] if not v["passed"])
        if red:
            console.print(f"[bold red]{red} of {len(art['gates'])} gate checks failed[/]")
        else:
            console.print(f"[green]all {len(art['gates'])} gate checks passed[/]")
