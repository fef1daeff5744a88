"""The highlighted passage's full text: a short header and a pre-wrapped, scrollable body.
Both have a fixed size, so a new passage repaints them and nothing else."""

from __future__ import annotations

import re
import textwrap

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.events import MouseScrollDown, MouseScrollUp
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from curator.review import Row
from curator.tui.widgets.lines import Lines
from curator.tui.widgets.passages import short_id

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")  # never let passage text drive the terminal
WHEEL_LINES = 3


def wrap_text(text: str, width: int) -> list[str]:
    """`text` as lines of at most `width - 1` cells, paragraph by paragraph."""
    lines: list[str] = []
    wrapper = textwrap.TextWrapper(width=width - 1)
    for paragraph in _CONTROL.sub("\ufffd", text.expandtabs()).splitlines():
        if len(paragraph) < width and paragraph.isascii():
            lines.append(paragraph.rstrip(" "))  # what textwrap makes of a line that fits
        else:
            lines.extend(wrapper.wrap(paragraph) or [""])
    return lines


class PassageText(Widget, can_focus=True):
    """Pre-wrapped lines, drawn from `top`; the last row says how many lines are below
    (when the preview is taller than two lines)."""

    BINDINGS = [
        Binding("down,j", "scroll_lines(1)", show=False, id="preview-down",
                tooltip="Scroll the preview a line down"),
        Binding("up", "scroll_lines(-1)", show=False, id="preview-up",
                tooltip="Scroll the preview a line up"),
        Binding("pagedown", "scroll_page(1)", show=False, id="preview-page-down",
                tooltip="Scroll the preview a page down"),
        Binding("pageup", "scroll_page(-1)", show=False, id="preview-page-up",
                tooltip="Scroll the preview a page up"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self.lines: list[str] = []
        self.top = 0
        self._style = Style()
        # made by `prepare`: text, width, its lines, and their strips from the top in a style
        self._next: tuple[str, int, list[str], Style, list[Strip]] | None = None
        self._made: list[Strip] = []  # those strips, while they are the ones on screen

    def show(self, text: str) -> None:
        self.text, self.top = text, 0
        ready, self._next = self._next, None
        if ready is not None and ready[:2] == (text, self._width()) and len(ready[4]) == self.size.height:
            self.lines, self._style, self._made = ready[2], ready[3], ready[4]
        else:
            self.lines, self._made = wrap_text(text, self._width()), []
        self.refresh()  # a repaint only: the widget's size does not depend on its text

    def prepare(self, text: str) -> None:
        """Wrap and draw `text` ahead of time (the next card's first passage, while the
        reviewer reads this one): `show(text)` then only swaps it in."""
        width, style = self._width(), self.rich_style
        lines = wrap_text(text, width)
        strips = [self._line(lines, 0, y, style) for y in range(self.size.height)]
        self._next = (text, width, lines, style, strips)

    def _width(self) -> int:
        return max(10, self.size.width or self.app.size.width // 2 - 4)

    def on_resize(self) -> None:
        self.lines, self._made = wrap_text(self.text, self._width()), []
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        style = self.rich_style  # once per paint: it walks the DOM (0.1 ms a line)
        if style != self._style:
            self._style, self._made = style, []
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        if self.top == 0 and y < len(self._made):
            return self._made[y]
        return self._line(self.lines, self.top, y, self._style)

    def _line(self, lines: list[str], top: int, y: int, style: Style) -> Strip:
        """Row `y` of `lines` shown from `top`; the last row says how many lines are below."""
        height, index = self.size.height, top + y
        below = len(lines) - (top + height) + 1
        if y == height - 1 and height > 2 and below > 1:  # a tiny preview keeps its text
            segment = Segment(f"↓ {below} more lines", style + Style(dim=True))
        else:
            segment = Segment(lines[index] if index < len(lines) else "", style)
        return Strip([segment]).adjust_cell_length(self.size.width, style)

    def action_scroll_lines(self, delta: int) -> None:
        top = max(0, min(len(self.lines) - self.size.height, self.top + delta))
        if top != self.top:
            self.top = top
            self.refresh()

    def action_scroll_page(self, direction: int) -> None:
        self.action_scroll_lines(direction * max(1, self.size.height - 1))

    def on_mouse_scroll_down(self, event: MouseScrollDown) -> None:
        event.stop()
        self.action_scroll_lines(WHEEL_LINES)

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        event.stop()
        self.action_scroll_lines(-WHEEL_LINES)


class Preview(Vertical):
    def compose(self) -> ComposeResult:
        yield Lines(id="preview-head")
        yield PassageText(id="preview-body")

    def show(self, row: Row | None) -> None:
        head = self.query_one("#preview-head", Lines)
        body = self.query_one(PassageText)
        if row is None:
            head.update("")
            body.show("")
            return
        head.update(self._head(row, head.size.width))
        body.show(row.text)

    def prepare(self, row: Row | None) -> None:
        """Make what `show(row)` will draw, ahead of time."""
        head = self.query_one("#preview-head", Lines)
        head.prepare(self._head(row, head.size.width) if row is not None else "")
        self.query_one(PassageText).prepare(row.text if row is not None else "")

    @staticmethod
    def _head(row: Row, width: int) -> Content:
        """The passage's id (its tail shows when it is cut), revision and date, heading."""
        when = f" · {row.committed_at[:10]}" if row.committed_at else ""
        return Content.assemble((short_id(row.id, width or 40), "b"), "\n", (f"revision {row.revision}{when}", "dim"),
                                "\n", (row.heading, "i"))  # fixed height in curator.tcss
