"""The header line: progress, kept per slice against targets, keep rate, pace."""

from __future__ import annotations

from textual.content import Content

from curator.review import Stats
from curator.tui.widgets.lines import Lines


class StatsBar(Lines):
    """One or two lines of session figures; redrawn after every decision."""

    def show(self, stats: Stats, set_name: str, reviewer: str, *, blind: bool = False) -> None:
        """`blind`: a second pass (curator.secondpass), said first so the reviewer knows a
        decision is a judgment to compare, not a change of the case."""
        parts = [Content.styled("second pass · blind · ", "b $warning")] if blind else []
        parts.append(Content.assemble((set_name, "b"), f" · {reviewer} · reviewed ", (str(stats.reviewed), "b"),
                                      f"/{stats.queue}"))
        rate = stats.keep_rate
        parts.append(Content(f" · keep {rate:.0%}" if rate is not None else " · keep –"))
        parts.append(Content(f" · {stats.per_minute:.1f}/min"))
        slices = []
        for name, target in stats.targets.items():
            have = stats.per_slice.get(name, 0)
            style = "$success" if target and have >= target else "$text-muted"
            slices.append(Content.styled(f"{_short(name)} {have}/{target}", style))
        line = Content("").join(parts)
        self.update(Content("\n").join([line, Content("  ").join(slices)]))


def _short(name: str) -> str:
    return {"exact_identifier": "exact", "multi_hop": "multi-hop"}.get(name, name)
