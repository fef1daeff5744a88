"""The triage card's parts: the failing case and its labels, the run's top results, and the
same question in earlier runs."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from curator.triage import CAUSES, Result, TriageItem

MARK = {
    "primary": "[b $success]P[/]",
    "secondary": "[b $warning]S[/]",
    "stale": "[b $error]![/]",
    "unlabelled": "[b $warning]?[/]",
}
WORD = {"primary": "primary", "secondary": "secondary", "stale": "stale revision", "unlabelled": "unjudged"}


def _rank(value: int | None) -> str:
    return f"@{value}" if value else "not in run"


class TriageFacts(Static):
    """Case id and revs, slice, failure kind; each label with its pin and rank in the run."""

    def show(self, item: TriageItem, note: str) -> None:
        case = item.case
        rev = f"rev {case.rev}" if case is not None else "no longer in the set"
        if case is not None and case.rev != item.scored_rev:
            rev += f" (run scored rev {item.scored_rev})"
        tags = f" · tags {', '.join(case.tags)}" if case is not None and case.tags else ""
        head = Content.from_markup(
            "[b]$qid[/b] $rev · slice [b]$slice[/b] · failure [b $error]$failure[/]$tags",
            qid=item.query_id, rev=rev, slice=item.slice, failure=item.failure, tags=tags,
        )
        lines = [head]
        ranks, stale = item.ranks, item.stale_ranks
        labels = case.relevant if case is not None else []
        if case is not None and case.expect_empty:
            lines.append(Content("labels: none (negative case: nothing should come back)"))
        for r in labels:
            staged = item.labels.get(r.id)
            change = "" if staged == r.role else f" → {staged or 'cleared'}"
            pin = f" pinned {r.revision[:12]}" if r.revision else ""
            where = _rank(ranks.get(r.id))
            if r.id in stale:
                where += f", stale @{stale[r.id]}"
            lines.append(Content.from_markup(
                f"  {MARK[r.role]} $id [dim]$role$pin[/] $where[b $warning]$change[/]",
                id=r.id, role=r.role, pin=pin, where=where, change=change,
            ))
        for pid, role in item.labels.items():
            if case is None or all(r.id != pid for r in case.relevant):
                lines.append(Content.from_markup(
                    f"  {MARK[role]} $id [b $warning]new $role[/] $where", id=pid, role=role,
                    where=_rank(ranks.get(pid) or _top_rank(item, pid)),
                ))
        if case is not None and case.freshness is not None:
            fresh = case.freshness
            lines.append(Content(f"  freshness: revision {fresh.revision[:12]}" if fresh.revision
                                 else f"  freshness: max age {fresh.max_age_days}d"))
        lines.extend(_latency_and_tie(item))
        if item.decision is not None:
            d = item.decision
            lines.append(Content.from_markup("[dim]decided: $c ($a) by $who[/]", c=d.cause, a=d.action, who=d.reviewer))
        if note:
            lines.append(Content.from_markup("note: [i]$n[/i]", n=note))
        self.update(Content("\n").join(lines))


def _latency_and_tie(item: TriageItem) -> list[Content]:
    """Latency, the scores around the first relevant hit, and a tie when there is one."""
    out = []
    latency = item.latency_ms
    around = item.scores_around_first_relevant()
    parts = [f"latency {latency:.1f} ms" if latency is not None else "latency: not recorded"]
    if around:
        parts.append("scores " + " · ".join(
            f"@{r.rank} {'–' if r.score is None else f'{r.score:.4g}'}" for r in around))
    out.append(Content.from_markup("[dim]$t[/]", t="  " + " · ".join(parts)))
    unjudged = item.unjudged()
    if unjudged:
        out.append(Content.from_markup(
            "  [b $warning]?[/] $n unjudged in the run's top results: label them (p/o) so the pool has no holes",
            n=str(len(unjudged))))
    tied = item.tie()
    if tied is not None:
        out.append(Content.from_markup(
            "  [b $warning]tie:[/] @$r $id has the answer's score; suggested cause: ranking tie (5)",
            r=str(tied.rank), id=tied.id))
    return out


def _top_rank(item: TriageItem, pid: str) -> int | None:
    return next((r.rank for r in item.results if r.id == pid and r.in_top), None)


class EarlierRuns(Static):
    """First relevant rank of this question in each earlier stored run of the set."""

    def show(self, item: TriageItem) -> None:
        if item.earlier is None:
            self.update(Content.from_markup("[dim]earlier runs: loading…[/]"))
            return
        if not item.earlier:
            self.update(Content.from_markup("[dim]earlier runs: none stored[/]"))
            return
        bits = []
        for run in item.earlier[-6:]:
            name = run.label or run.artefact[:16]
            if not run.present:
                bits.append(Content.from_markup("$n [dim]not in run[/]", n=name))
            else:
                verdict = run.failure or "ok"
                bits.append(Content.from_markup(
                    "$n [b]$r[/b] [dim]$v[/]", n=name,
                    r=f"@{run.first_relevant_rank}" if run.first_relevant_rank else "–", v=verdict))
        more = f"{len(item.earlier) - 6} older · " if len(item.earlier) > 6 else ""
        self.update(Content.from_markup("[dim]earlier runs (first relevant rank):[/] $more", more=more)
                    + Content(" · ").join(bits))


def result_prompt(result: Result) -> Content:
    if not result.in_top:
        where = f"ranked {result.rank}, below the stored top" if result.rank else "not returned by the run"
        return Content.from_markup(
            f"{MARK[result.mark]} [b] –[/b] $id [dim]$where · $word[/]",
            id=result.id, where=where, word=WORD[result.mark],
        )
    score = "–" if result.score is None else f"{result.score:.3f}"
    return Content.from_markup(
        f"{MARK[result.mark]} [b]$rank[/b] $id [dim]score $score · @$rev · $word[/]",
        rank=f"{result.rank:>2}", id=result.id, score=score, rev=(result.revision or "–")[:12],
        word=WORD[result.mark],
    )


class ResultList(OptionList):
    """The run's top results for the case; labels apply to the highlighted one."""

    def show_item(self, item: TriageItem) -> None:
        self.set_options([Option(result_prompt(r), id=f"r{i}") for i, r in enumerate(item.results)])
        if item.results:
            self.highlighted = 0

    def refresh_results(self, item: TriageItem) -> None:
        for i, result in enumerate(item.results):
            self.replace_option_prompt_at_index(i, result_prompt(result))


class CauseKeys(Static):
    """The cause keys as the keymap has them."""

    def show(self, keys: dict[str, str]) -> None:
        bits = [Content.from_markup("[b]$k[/b] $c", k=keys.get(cause, "?"), c=label) for cause, label in CAUSES.items()]
        self.update(Content.from_markup("[dim]cause:[/] ") + Content("  ").join(bits))
