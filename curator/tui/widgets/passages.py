"""The passage suggestions: an OptionList whose rows show labels, ids and snippets."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from curator.review import Card, Row
from curator.workspace import HL_END, HL_START

MARK = {"primary": "[b $success]P[/]", "secondary": "[b $warning]S[/]"}


def snippet_content(snippet: str) -> Content:
    """A snippet with its matched words bold (the search's highlight marks)."""
    pieces: list[Content] = []
    rest = snippet
    while HL_START in rest:
        before, _, tail = rest.partition(HL_START)
        hit, _, rest = tail.partition(HL_END)
        pieces += [Content(before), Content.from_markup("[b u]$hit[/]", hit=hit)]
    pieces.append(Content(rest))
    return Content("").join(pieces)


def row_prompt(row: Row, role: str | None) -> Content:
    mark = MARK.get(role or "", "[dim]·[/]")
    head = Content.from_markup(
        f"{mark} [b]$id[/b] [dim]@$rev · $reason[/]", id=row.id, rev=row.revision[:10], reason=row.reason
    )
    lines = [head]
    if row.heading:
        lines.append(Content.from_markup("  [i]$h[/i]", h=row.heading))
    if row.missing:
        lines.append(Content.from_markup("  [$error]not in the corpus[/]"))
    elif row.snippet:
        lines.append(Content("  ") + snippet_content(" ".join(row.snippet.split())[:200]))
    return Content("\n").join(lines)


class PassageList(OptionList):
    """Suggestions for the current card; the highlighted row is the one labels apply to."""

    def show_card(self, card: Card, keep_index: bool = False) -> None:
        index = self.highlighted if keep_index else 0
        self.set_options(
            [Option(row_prompt(r, card.labels.get(r.id)), id=f"p{i}") for i, r in enumerate(card.rows)]
        )
        if card.rows:
            self.highlighted = min(index or 0, len(card.rows) - 1)

    def refresh_row(self, card: Card, index: int) -> None:
        row = card.rows[index]
        self.replace_option_prompt_at_index(index, row_prompt(row, card.labels.get(row.id)))
