"""The highlighted passage's full text: a short header and a virtual, pre-wrapped body.

The body is a Log (only the visible lines are drawn) fed lines wrapped with textwrap:
re-wrapping a whole passage inside a Static was most of the cost of a new card.
"""

from __future__ import annotations

import textwrap

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Log, Static

from curator.review import Row


class Preview(Vertical):
    def compose(self) -> ComposeResult:
        yield Static(id="preview-head")
        yield Log(id="preview-body", highlight=False, auto_scroll=False)

    def show(self, row: Row | None) -> None:
        head = self.query_one("#preview-head", Static)
        body = self.query_one("#preview-body", Log)
        body.clear()
        if row is None:
            head.update("")
            return
        head.update(Content.from_markup(
            "[b]$id[/b]\n[dim]revision $rev$when[/]\n[i]$heading[/i]", id=row.id, rev=row.revision,
            when=f" · {row.committed_at[:10]}" if row.committed_at else "", heading=row.heading,
        ))
        width = max(20, body.scrollable_content_region.width or self.size.width - 2)
        lines: list[str] = []
        for paragraph in row.text.splitlines():
            lines.extend(textwrap.wrap(paragraph, width=width - 1, replace_whitespace=False,
                                       drop_whitespace=True) or [""])
        body.write_lines(lines, scroll_end=False)
        body.scroll_home(animate=False)
