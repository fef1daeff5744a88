"""`Lines`: the text widget of the review card, drawn line by line.

A Static re-wraps and re-styles its whole text on every paint. The card's widgets have
fixed sizes and change once per card, so `Lines` turns its text into one strip per line
when it is set, and repaints only the lines that differ from what is on screen (a label
repaints one row of the passage list; a new card, what really changed). The strips of the
next text can be made ahead (`prepare`, while the reviewer reads the card on screen), so
showing it only swaps them in. Wrapping follows
the widget's CSS as a Static's would: `text-wrap: nowrap` cuts a line (with `…` under
`text-overflow: ellipsis`), otherwise lines wrap at words.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style
from textual.widget import Widget


class Lines(Widget):
    def __init__(self, text: Content | str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._text = Content(text) if isinstance(text, str) else text
        self._shown: list[Content] = []  # the lines on screen, and as strips:
        self._strips: list[Strip] = []
        self._ready: _Ready | None = None  # lines made ahead by `prepare`

    def render(self) -> Content:
        """The lines on screen (textual draws them with `render_line`)."""
        return Content("\n").join(self._shown)

    def update(self, text: Content | str) -> None:
        """Show `text`, wrapped or cut to the widget's width by its CSS."""
        self._text = Content(text) if isinstance(text, str) else text
        ready = self._ready
        if ready is not None and ready.text is not None and ready.width == self.size.width and _same(ready.text, self._text):
            self.show_lines(ready.lines)  # made by `prepare`: its strips are swapped in
            return
        self.show_lines(self._wrap(self._text))

    def prepare(self, text: Content | str) -> list[Strip]:
        """Make the strips that `update(text)` will show, ahead of time (returned)."""
        text = Content(text) if isinstance(text, str) else text
        return self.prepare_lines(self._wrap(text), text)

    def prepare_lines(self, lines: list[Content], text: Content | None = None) -> list[Strip]:
        """Make the strips that `show_lines(lines)` (the same list) will show, ahead of time.
        One text is kept ready at a time; it is used only if the style is still the same."""
        style = self.visual_style
        strips = [_strip(line, y, style) for y, line in enumerate(lines)]
        self._ready = _Ready(text, self.size.width, lines, style, strips)
        return strips

    def _wrap(self, text: Content) -> list[Content]:
        width = self.size.width
        if not width:  # not laid out yet: on_resize wraps it
            return []
        lines = text.split("\n", allow_blank=True)
        if "\t" not in text.plain and all(line.cell_length <= width for line in lines):
            return lines  # what either way makes of lines that fit
        if self.styles.text_wrap == "nowrap":
            ellipsis = self.styles.text_overflow == "ellipsis"
            return [line.truncate(width, ellipsis=ellipsis) for line in lines]
        return text.wrap(width)

    def show_lines(self, lines: list[Content], restyle: bool = False) -> None:
        """Show these lines as they are, repainting only the ones that changed (`restyle`:
        all of them, in the widget's current style)."""
        style = self.visual_style
        old_lines, old_strips = self._shown, self._strips
        ready = self._ready
        made = ready.strips if ready is not None and ready.lines is lines and ready.style == style else None
        strips, changed = [], []
        for y, line in enumerate(lines):
            if not restyle and y < len(old_lines) and _same(line, old_lines[y]):
                strips.append(old_strips[y])
            else:
                strips.append(made[y] if made is not None else _strip(line, y, style))
                changed.append(y)
        changed += range(len(lines), len(old_lines))  # lines no longer there
        self._strips, self._shown = strips, lines
        if len(changed) > len(lines) // 2:
            self.refresh()
            return
        for y in changed:
            self.refresh(Region(0, y, self.size.width, 1))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self._shown:  # a class or the theme changed: the same lines in the new style
            self.show_lines(self._shown, restyle=True)

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self) -> None:
        """Draw again at the widget's (new) size."""
        self.update(self._text)

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips):
            return self._strips[y]  # textual pads it to the width
        return Strip.blank(self.size.width, self.visual_style.rich_style)  # as a Static's


@dataclass
class _Ready:
    """Lines made ahead of time: for `text` (None: set as lines) at `width`, in `style`."""

    text: Content | None
    width: int
    lines: list[Content]
    style: Style
    strips: list[Strip]


def _same(a: Content, b: Content) -> bool:
    return a.plain == b.plain and a.spans == b.spans  # Content's == compares the text only


def _strip(line: Content, y: int, style: Style) -> Strip:
    """`line` as segments on `style`, each with its offset in the text (what textual's own
    text selection reads, as in a Static)."""
    segments, x = [], 0
    for text, text_style in line.render(style, end=""):
        segments.append(Segment(text, (style + text_style).rich_style_with_offset(x, y)))
        x += len(text)
    return Strip(segments, line.cell_length)
