"""`curator agreement`: how far a second reviewer's blind judgments agree with the set."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.markup import escape
from rich.table import Table

from curator.cli.main import cli, console, err_console, json_option, pass_ws, print_json

if TYPE_CHECKING:
    from curator.agreement import AgreementReport, Figures
    from curator.workspace import Workspace


@cli.command("agreement")
@click.option("--set", "set_name", help="Question set (default: default_set).")
@click.option("--min-kappa", type=click.FloatRange(-1, 1),
              help="Exit 1 when an overall kappa (keep/bin, slice, grade) is below this (a CI gate).")
@json_option
@pass_ws
def agreement_cmd(ws: Workspace, set_name: str | None, min_kappa: float | None, as_json: bool) -> None:
    """Agreement between first decisions and second judgments (curator review --second-pass),
    per slice and overall: Cohen's kappa on keep/bin and on the slice, linearly weighted
    kappa on graded relevance per (case, passage), the Jaccard overlap of the primary
    passages, and every disagreement (resolve them in the set browser: b, then d).

    \b
    Example:
        curator agreement
        curator agreement --set main --json | jq .overall.grade_kappa
        curator agreement --min-kappa 0.4        # exit 1 below moderate agreement
    """
    from curator.agreement import agreement

    ws.existing_set(set_name)  # a typo'd set name: say so, not "no judgments"
    report = agreement(ws, set_name)
    for problem in report.problems:
        err_console.print(f"[yellow]skipped[/] {escape(problem)}", highlight=False)
    if as_json:
        print_json(report.to_dict())
    else:
        _print(report)
    if min_kappa is not None:
        _gate(report, min_kappa)


def _gate(report: AgreementReport, floor: float) -> None:
    """Fail (exit 1) when a defined overall kappa is under `floor`, or none is defined."""
    from curator.errors import CuratorError

    overall = report.overall
    kappas = {"keep/bin": overall.decision_kappa, "slice": overall.slice_kappa, "grade": overall.grade_kappa}
    low = [f"{name} κ {value:.2f}" for name, value in kappas.items() if value is not None and value < floor]
    if low:
        raise CuratorError(f"agreement below --min-kappa {floor:g}: {', '.join(low)}")
    if all(value is None for value in kappas.values()):
        raise CuratorError(f"no kappa to hold to --min-kappa {floor:g}: no second judgments, or one label only",
                           "Run `curator review --second-pass --reviewer NAME` first.")


def _kappa(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _both(kappa: float | None, share: float | None) -> str:
    return f"{_kappa(kappa)} ({_share(share)})"


def _row(name: str, f: Figures) -> list[str]:
    return [name, str(f.pairs), _both(f.decision_kappa, f.decision_agreement), str(f.both_kept),
            _both(f.slice_kappa, f.slice_agreement), str(f.graded_pairs), _both(f.grade_kappa, f.grade_agreement),
            _kappa(f.primary_jaccard)]


def _print(report: AgreementReport) -> None:
    if not report.overall.pairs:
        console.print(f"No second judgments in {escape(report.set_name)} yet: "
                      "run `curator review --second-pass --reviewer NAME` as another reviewer.")
        return
    console.print(f"Set [b]{escape(report.set_name)}[/b] · reviewers {escape(', '.join(report.reviewers))}")
    table = Table("slice", "items", "keep/bin κ", "kept", "slice κ", "pairs", "grade κw", "prim. J")
    for name, figures in report.per_slice.items():
        table.add_row(*_row(escape(name), figures))
    table.add_row(*_row("[b]overall[/b]", report.overall), end_section=True)
    console.print(table)
    console.print("[dim]κ: Cohen's kappa, (raw agreement); – undefined (one label only). kept: items both "
                  "kept; pairs: (item, passage) pairs either labelled; κw: linearly weighted; prim. J: mean "
                  "Jaccard overlap of the primaries. docs/review.md says how to read them.[/]")
    open_ones = [d for d in report.disagreements if not d.resolved]
    console.print(f"{len(report.disagreements)} disagreement(s), {len(open_ones)} open:")
    for d in report.disagreements:
        state = "[green]resolved[/]" if d.resolved else "[yellow]open[/]"
        first, second = d.first, d.second
        what = ", ".join(d.differences)
        console.print(
            f"  {state} {escape(d.query_id or f'{d.target} “{d.query}”')}: {what} · {escape(first.reviewer)} {first.decision}"
            f"{'/' + escape(first.slice) if first.slice else ''} vs {escape(second.reviewer)} {second.decision}"
            f"{'/' + escape(second.slice) if second.slice else ''}",
            highlight=False,
        )
