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

    def show(self, text: str) -> None:
        self.text, self.top = text, 0
        self.lines = wrap_text(text, self._width())
        self.refresh()  # a repaint only: the widget's size does not depend on its text

    def _width(self) -> int:
        return max(10, self.size.width or self.app.size.width // 2 - 4)

    def on_resize(self) -> None:
        self.lines = wrap_text(self.text, self._width())
        self.refresh()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._style = self.rich_style  # once per paint: it walks the DOM (0.1 ms a line)
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        style = self._style
        height, index = self.size.height, self.top + y
        below = len(self.lines) - (self.top + height) + 1
        if y == height - 1 and height > 2 and below > 1:  # a tiny preview keeps its text
            segment = Segment(f"↓ {below} more lines", style + Style(dim=True))
        else:
            segment = Segment(self.lines[index] if index < len(self.lines) else "", style)
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
        when = f" · {row.committed_at[:10]}" if row.committed_at else ""
        pid = short_id(row.id, head.size.width or 40)  # the id's tail shows when it is cut
        head.update(Content.assemble((pid, "b"), "\n", (f"revision {row.revision}{when}", "dim"), "\n",
                                     (row.heading, "i")))  # fixed height in curator.tcss
        body.show(row.text)
