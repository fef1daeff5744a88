"""The passage suggestions: rows with label marks, ids, headings and snippets.

One widget drawn line by line from fixed-height rows (not an OptionList, whose re-measuring
was most of a keypress): a new card repaints it without a layout pass, and a label or a
cursor move repaints only the lines that changed.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from textual.binding import Binding
from textual.content import Content
from textual.events import MouseScrollDown, MouseScrollUp
from textual.message import Message
from textual.widget import Widget

from curator.review import Card, Row
from curator.tui.widgets.lines import Lines
from curator.workspace import HL_END, HL_START

MARK = {"primary": ("P", "b $success"), "secondary": ("S", "b $warning")}
NO_MARK = ("·", "dim")
SNIPPET_LINES = 2


def snippet_content(snippet: str) -> Content:
    """A snippet with its matched words bold (the search's highlight marks)."""
    pieces: list[str | tuple[str, str]] = []
    rest = " ".join(snippet.split())
    while HL_START in rest:
        before, _, tail = rest.partition(HL_START)
        hit, _, rest = tail.partition(HL_END)
        pieces += [before, (hit, "b u")]
    pieces.append(rest)
    return Content.assemble(*pieces)


def _wrap(content: Content, width: int, lines: int) -> list[Content]:
    """At most `lines` lines of `content` wrapped at word boundaries, keeping its styles."""
    plain = content.plain
    width = max(10, width)
    # Only the start can show: wrapping a long snippet whole was most of a card's drawing.
    wrapped = textwrap.wrap(plain[: width * (lines + 1)], width=width, break_long_words=True)[:lines]
    out, pos = [], 0
    for text in wrapped:
        start = plain.find(text, pos)
        if start < 0:
            break
        out.append(content[start : start + len(text)])
        pos = start + len(text)
    return out


def short_id(pid: str, width: int) -> str:
    """`pid` in at most `width` cells, cut in the middle so its distinguishing tail stays:
    the anchor after `#` whole (`#diagnosis` vs `#diagnosis-part-2`), then as much of the
    path as fits."""
    if len(pid) <= width:
        return pid
    width = max(width, 4)
    path, hash_, anchor = pid.rpartition("#")
    tail = hash_ + anchor if path else pid[-(width - 1):]
    if len(tail) + 1 >= width:
        return "…" + pid[-(width - 1):]
    return pid[: width - 1 - len(tail)] + "…" + tail


def row_lines(row: Row, card: Card, width: int) -> list[Content]:
    """A row as fixed-height lines: mark and id (its tail kept when cut), why it is
    suggested and its heading (the heading cut first), snippet (SNIPPET_LINES)."""
    mark, style = MARK.get(card.labels.get(row.id) or "", NO_MARK)
    mark += str(card.grades.get(row.id, ""))  # a grade set by hand follows the mark: P3
    head = Content.assemble((mark, style), " ", (short_id(row.id, width - len(mark) - 1), "b"))
    why = f"{row.reason}{_sources(row)} · @{row.revision[:10]}"
    heading = Content.assemble("  ", (why, "dim"), *((" · ", (row.heading, "i")) if row.heading else ()))
    if heading.cell_length > width:
        heading = heading[: max(0, width - 1)] + Content("…")
    if row.missing:
        body = [Content.assemble("  ", ("not in the corpus", "$error"))]
    else:
        body = [Content("  ") + line for line in _wrap(snippet_content(row.snippet), width - 2, SNIPPET_LINES)]
    body += [Content("")] * (SNIPPET_LINES - len(body))
    return [head, heading, *body]


def _sources(row: Row) -> str:
    """Which sources proposed the row and at which rank: ` · bm25 #2, dense #1` (the
    reason's own source is left out when it is the only one)."""
    shown = [f"{name.removeprefix('run:')} #{rank}" for name, rank in row.sources
             if not (len(row.sources) == 1 and name in (row.reason, "bm25"))]
    return f" · {', '.join(shown)}" if shown else ""


ROW_HEIGHT = 2 + SNIPPET_LINES


def _position(card: Card, highlighted: int | None) -> str:
    """Which row of how many, for the bottom edge of the box."""
    return f"{(highlighted or 0) + 1}/{len(card.rows)}" if card.rows else ""


class PassageList(Lines, can_focus=True):
    """Suggestions for the current card; the highlighted row is the one labels apply to."""

    BINDINGS = [
        Binding("down,j", "cursor_down", "next passage", show=False, id="next-passage",
                tooltip="Highlight the next passage"),
        Binding("up", "cursor_up", "previous passage", show=False, id="previous-passage",
                tooltip="Highlight the previous passage"),
        Binding("pagedown", "page_down", show=False, id="page-passages",
                tooltip="Scroll the passages a page down"),
        Binding("pageup", "page_up", show=False, id="page-passages-up",
                tooltip="Scroll the passages a page up"),
        Binding("home", "first", show=False, id="first-passage", tooltip="Highlight the first passage"),
        Binding("end", "last", show=False, id="last-passage", tooltip="Highlight the last passage"),
    ]

    @dataclass
    class Highlighted(Message):
        index: int | None

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.card: Card | None = None
        self.highlighted: int | None = None
        self._lines: list[list[Content] | None] = []  # per row, unhighlighted; built when first drawn
        self._width = 0
        self.top = 0  # first row drawn
        self._next: tuple[Card, int, int, list[list[Content] | None], list[Content]] | None = None  # `prepare`

    def show_card(self, card: Card, keep_index: bool = False) -> None:
        self.card = card
        index = self.highlighted if keep_index else 0
        self.highlighted = min(index or 0, len(card.rows) - 1) if card.rows else None
        if not keep_index:
            self.top = 0
        ready, self._next = self._next, None  # used once: the card's rows may change later (a search)
        if ready is not None and ready[0] is card and not keep_index and ready[1:3] == (self._row_width(), self.size.height):
            # made by `prepare`: its lines and strips are swapped in
            self._width, self._lines = ready[1], ready[3]
            self.show_lines(ready[4])
            self._show_position(_position(card, self.highlighted))
            return
        self._lines = []  # _draw builds them
        self._draw()

    def prepare_card(self, card: Card) -> None:
        """Make the lines and strips that `show_card(card)` will draw, ahead of time (the
        next card, while the reviewer reads this one)."""
        width = self._row_width()
        rows: list[list[Content] | None] = [None] * len(card.rows)
        out = self._frame(card, rows, width, 0, 0 if card.rows else None)
        self.prepare_lines(out)
        self._next = (card, width, self.size.height, rows, out)

    def clear_rows(self) -> None:
        self.card, self.highlighted, self._lines, self.top = None, None, [], 0
        self._show_position("")
        self.show_lines([])

    def refresh_row(self, card: Card, index: int) -> None:
        if index < len(self._lines):
            self._lines[index] = None  # rebuilt by _draw
        self._draw()

    def _visible_rows(self) -> int:
        return max(1, (self.size.height or ROW_HEIGHT) // ROW_HEIGHT)

    def _row_width(self) -> int:
        return max(20, (self.size.width or self.app.size.width // 2) - 1)

    def _draw(self) -> None:
        """Draw the rows that fit, from `top`, keeping the highlighted one in view. Only
        those lines are rendered, and the widget's size never depends on them."""
        card = self.card
        if card is None:
            return
        width = self._row_width()
        if width != self._width or len(self._lines) != len(card.rows):
            self._width = width
            self._lines = [None] * len(card.rows)
        shown = self._visible_rows()
        if self.highlighted is not None:
            self.top = min(self.top, self.highlighted)
            self.top = max(self.top, self.highlighted - shown + 1)
        self.show_lines(self._frame(card, self._lines, width, self.top, self.highlighted))
        self._show_position(_position(card, self.highlighted))

    def _frame(self, card: Card, rows: list[list[Content] | None], width: int, top: int,
               highlighted: int | None) -> list[Content]:
        """The lines of the rows in view from `top`; `rows` caches each row's lines."""
        out: list[Content] = []
        for i in range(top, min(len(rows), top + self._visible_rows() + 1)):  # + a partial row
            lines = rows[i]
            if lines is None:  # only the rows in view are ever built
                lines = rows[i] = row_lines(card.rows[i], card, width)
            if i == highlighted:
                lines = [line.pad_right(width - line.cell_length).stylize("on $boost") for line in lines]
                lines[0] = lines[0].stylize("b")
            out.extend(lines)
        return out[: self.size.height or None]

    def _show_position(self, text: str) -> None:
        """Which row of how many (the list scrolls), on the bottom edge of its box; set only
        when it changes, since setting it redraws the whole box."""
        if isinstance(self.parent, Widget) and self.parent.border_subtitle != text:
            self.parent.border_subtitle = text

    def redraw(self) -> None:
        self._draw()

    def _move(self, delta: int) -> None:
        if self.card is None or not self.card.rows:
            return
        current = self.highlighted or 0
        new = max(0, min(len(self.card.rows) - 1, current + delta))
        if new != self.highlighted:
            self.highlighted = new
            self._draw()
            self.post_message(self.Highlighted(new))

    def action_cursor_down(self) -> None:
        self._move(1)

    def action_cursor_up(self) -> None:
        self._move(-1)

    def action_page_down(self) -> None:
        self._move(self._visible_rows())

    def action_page_up(self) -> None:
        self._move(-self._visible_rows())

    def action_first(self) -> None:
        self._move(-(self.highlighted or 0))

    def action_last(self) -> None:
        if self.card is not None:
            self._move(len(self.card.rows) - 1 - (self.highlighted or 0))

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        event.stop()
        self._move(1)

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        event.stop()
        self._move(-1)
