"""`curator verify` and `curator sets`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.markup import escape

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json
from curator.errors import CuratorError
from curator.problems import Problem

if TYPE_CHECKING:
    from curator.workspace import Workspace

F = TypeVar("F", bound=Callable[..., Any])
SHOWN_ERRORS, SHOWN_WARNINGS = 50, 20  # per set, unless `curator verify --all`


def no_verify_option(func: F) -> F:
    """`--no-verify`: build on the set even if it fails `curator verify`."""
    return click.option(
        "--no-verify", "no_verify", is_flag=True, help="Go ahead even if the set fails `curator verify`."
    )(func)


def check_sets(ws: Workspace, names: list[str] | None, no_verify: bool) -> None:
    """The one-call hook of the commands that build on sets: refuse (exit 1, the first
    problem as file:line) a set that fails verify, unless --no-verify."""
    if no_verify:
        return
    from curator.verify import require_sound

    require_sound(ws, names)


@cli.command()
@click.argument("set_names", nargs=-1, metavar="[SET]...")
@click.option("--strict", is_flag=True, help="Passage ids missing from the corpus are errors, not warnings.")
@click.option("--repair", is_flag=True, help="First complete a write a crash interrupted (.pending.json).")
@click.option("--all", "all_problems", is_flag=True,
              help=f"Print every problem (else the first {SHOWN_ERRORS} errors and {SHOWN_WARNINGS} warnings per set).")
@json_option
@pass_ws
def verify(
    ws: Workspace, set_names: tuple[str, ...], strict: bool, repair: bool, all_problems: bool, as_json: bool
) -> None:
    """Check question-set files: schema, revs, change log, passage ids, append-only history.

    Exits 1 (naming file and line) if a line is invalid, a rev skips, a change-log entry
    is missing or does not fit its case, bytes are not plain LF UTF-8, a write is pending,
    or an earlier line was edited, removed or reordered: checked against every commit when
    the set is in git, else against the local checkpoint (docs/export.md). A passing
    verify records a new checkpoint.

    \b
    Example:
        curator verify            # every set
        curator verify main --strict
        curator verify --all      # every problem, not the first 50 errors and 20 warnings
    """
    from curator.verify import repair as repair_set
    from curator.verify import verify_workspace

    names = list(set_names) or ws.set_names()
    if not names:
        raise CuratorError("no question sets in this workspace yet", "Keep some candidates with `curator review`.")
    for name in names if repair else []:
        if repair_set(ws.question_set(name)):
            console.print(f"set [bold]{escape(name)}[/]: completed the interrupted write")
    reports = verify_workspace(ws, names, strict=strict)
    failed = [r for r in reports if not r.ok]
    if as_json:
        print_json([r.to_dict() for r in reports])
    else:
        for report in reports:
            mark = "[green]ok[/]" if report.ok else "[bold red]FAILED[/]"
            console.print(f"{mark}  set [bold]{report.set_name}[/]: {report.active} active cases, {report.lines} lines; "
                          f"append-only: {report.history}")
            _print_problems(report.problems, everything=all_problems)
            for note in report.notes:
                if note.startswith("append-only:"):
                    continue
                console.print(f"  [dim]{escape(note)}[/]")
    if failed:
        sys.exit(1)


def _print_problems(problems: list[Problem], *, everything: bool) -> None:
    """Errors first, then warnings; without `everything` only the first few of each, and
    how many more there are (a set rewritten with CRLF has an error on every line)."""
    errors = [p for p in problems if p.fatal]
    warnings = [p for p in problems if not p.fatal]
    for kind, found, shown, colour in (("error", errors, SHOWN_ERRORS, "red"), ("warning", warnings, SHOWN_WARNINGS,
                                                                                 "yellow")):
        limit = len(found) if everything else shown
        for problem in found[:limit]:
            err_console.print(f"  [{colour}]{kind}:[/] {escape(str(problem))}", highlight=False)
        if len(found) > limit:
            err_console.print(f"  [{colour}]... and {len(found) - limit:,} more {kind}s[/] "
                              "(`curator verify --all` prints them, `--json` lists them)", highlight=False)


@cli.group("sets", invoke_without_command=True)
@json_option
@click.pass_context
def sets_group(ctx: click.Context, as_json: bool) -> None:
    """List the workspace's question sets (`curator sets import` brings one in).

    \b
    Example:
        curator sets --json
        curator sets import beir/ --format beir --slice paraphrase
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_sets, as_json=as_json)


@pass_ws
def list_sets(ws: Workspace, as_json: bool) -> None:
    from curator.verify import read_checked

    rows = []
    for name in ws.set_names():
        result, _report = read_checked(ws, ws.question_set(name))
        active = sum(1 for c in result.cases.values() if c.status == "active")
        rows.append({"set": name, "active": active, "cases": len(result.cases), "lines": result.lines})
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("No question sets yet.")
    for row in rows:
        default = " (default)" if row["set"] == ws.config.default_set else ""
        console.print(f"[bold]{row['set']}[/]{default}: {row['active']} active of {row['cases']} cases")


@cli.command()
@click.argument("query_id")
@click.option("--line", "line", type=int, required=True, help="The cases.jsonl line of the revision to keep.")
@click.option("--set", "set_name", help="The question set (default: the workspace's default set).")
@click.option("--reviewer", default="", help="Who resolved it (recorded in the change log).")
@json_option
@pass_ws
def resolve(ws: Workspace, query_id: str, line: int, set_name: str | None, reviewer: str, as_json: bool) -> None:
    """Settle a merge conflict: append the revision at LINE of QUERY_ID as its next rev.

    After a union merge of two branches that both revised a case, verify names the two
    colliding lines; this appends the chosen one as rev+1 with a change-log entry, and
    verify passes again. Nothing is rewritten.

    \b
    Example:
        curator resolve how-to-rotate-keys --line 41
    """
    from curator.resolve import resolve_conflict

    case = resolve_conflict(ws.existing_set(set_name), query_id, line, reviewer=reviewer)
    if as_json:
        print_json({"query_id": case.query_id, "rev": case.rev})
    else:
        console.print(f"{escape(case.query_id)}: line {line} kept as rev {case.rev}")
