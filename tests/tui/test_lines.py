"""The card's text widgets (`Lines`): drawn as a Static would draw the same text, restyled
with the theme or a class, and a label repaints only the lines that changed."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.content import Content
from textual.widgets import Static

from curator.tui.app import ReviewApp
from curator.tui.widgets.lines import Lines
from curator.tui.widgets.passages import PassageList
from tests.tui.conftest import screen_rows, settle

pytestmark = pytest.mark.anyio

TEXT = Content.assemble(("bold part", "b $success"), " then a plain tail long enough to need a second line",
                        "\n", ("second", "i"), " paragraph")
FITS = Content.assemble(("short", "b"), " line\n", ("tail", "i"), "\n")  # ends in a blank line


class Pair(App[None]):
    CSS = """
    Static, Lines { width: 30; height: 4; color: $text-muted; }
    .cut { text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def compose(self) -> ComposeResult:
        yield Static(TEXT, id="static")
        yield Lines(TEXT, id="lines")
        yield Static(TEXT, id="static-cut", classes="cut")
        yield Lines(TEXT, id="lines-cut", classes="cut")
        yield Static(FITS, id="static-fits")
        yield Lines(FITS, id="lines-fits")


def cells(app: App[None], widget_id: str) -> list[list[tuple[str, str]]]:
    """The widget's lines as drawn on screen: (text, style) per segment, without meta."""
    widget = app.screen.query_one(f"#{widget_id}")
    region = widget.region
    strips = app.screen._compositor.render_strips()[region.y : region.bottom]
    out = []
    for strip in strips:
        line = strip.crop(region.x, region.right).simplify().discard_meta()
        out.append([(seg.text, str(seg.style)) for seg in line])
    return out


async def test_lines_draws_what_a_static_draws_wrapped_or_cut():
    app = Pair()
    async with app.run_test(size=(40, 24)) as pilot:
        await pilot.pause()
        assert cells(app, "lines") == cells(app, "static")
        assert cells(app, "lines-cut") == cells(app, "static-cut")
        assert cells(app, "lines-fits") == cells(app, "static-fits")
        assert "…" in app.screen.query_one("#lines-cut", Lines).render().plain  # cut, not wrapped
        assert len(app.screen.query_one("#lines", Lines).render().plain.splitlines()) == 4  # wrapped: 3 + 1
        before = cells(app, "lines")
        app.theme = "textual-light"  # new colours: the strips are made again
        await pilot.pause()
        assert cells(app, "lines") != before
        assert cells(app, "lines") == cells(app, "static")


async def test_a_refused_keep_draws_the_message_in_the_error_style(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("k")  # no primary yet: refused
        await settle(pilot)
        message = app.screen.query_one("#message", Lines)
        assert "primary" in message.render().plain
        y = message.region.y
        drawn = app.screen._compositor.render_strips()[y]
        styles = [seg.style for seg in drawn if seg.text.strip()]
        assert styles and all(style is not None and style.bold for style in styles)  # -error: bold


async def test_a_label_repaints_only_the_row_it_changes(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        passages = app.screen.query_one(PassageList)
        assert passages.highlighted == 0
        passages._repaint_regions.clear()
        app.screen.action_mark_primary()  # before the next frame, see what is to repaint
        regions = list(passages._repaint_regions)
        assert regions and all(region.height == 1 for region in regions)
        assert {region.y for region in regions} == {0}  # the mark on the row's first line
        await settle(pilot)
        assert passages.render().plain.startswith("P ")


def test_the_preview_wraps_each_paragraph_as_textwrap_does():
    import textwrap

    from curator.tui.widgets.preview import wrap_text

    paragraphs = ["  indented code  ", "trailing   ", "   ", "", "nbsp\u00a0", "\u00a0", "x  \u00a0",
                  "fits exactly 19 ch.", "one word too many for the width here", "a" * 45]
    for width in (12, 20, 40):
        expected = [line for p in paragraphs for line in (textwrap.wrap(p, width=width - 1) or [""])]
        assert wrap_text("\n".join(paragraphs), width) == expected


async def test_a_text_made_ahead_is_swapped_in_and_drawn_as_a_static_draws_it():
    app = Pair()
    async with app.run_test(size=(40, 24)) as pilot:
        await pilot.pause()
        lines, static = app.screen.query_one("#lines", Lines), app.screen.query_one("#static", Static)
        new = Content.assemble(("next", "b $warning"), " card's text, long enough to wrap once more")
        made = lines.prepare(new)
        assert cells(app, "lines") == cells(app, "static")  # nothing of it shows before update
        lines.update(new)
        static.update(new)
        assert [lines.render_line(y) for y in range(len(made))] == made
        assert all(lines.render_line(y) is strip for y, strip in enumerate(made))  # swapped in, not made again
        await pilot.pause()
        assert cells(app, "lines") == cells(app, "static")
        # made ahead in one theme, shown in another: made again in the new style
        later = Content("a later text in another theme")
        made = lines.prepare(later)
        app.theme = "textual-light"
        await pilot.pause()
        lines.update(later)
        static.update(later)
        assert lines.render_line(0) is not made[0]
        await pilot.pause()
        assert cells(app, "lines") == cells(app, "static")


async def test_the_next_card_is_made_while_this_one_shows_and_draws_as_a_fresh_start_would(rws):
    app = ReviewApp(rws, blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.pause(0.2)  # the prefetch, then the next card made ahead
        await settle(pilot)
        upcoming = app.session.upcoming()
        passages = app.screen.query_one(PassageList)
        assert upcoming is not None and passages._next is not None and passages._next[0] is upcoming
        await pilot.press("p", "k")
        await settle(pilot)
        assert app.screen.current is upcoming
        assert "kept as" in app.screen.query_one("#message", Lines).render().plain
        kept = screen_rows(app, 2, 38)  # the card: under the stats, above the message and footer
    again = ReviewApp(rws, blink=False)  # a new session shows that card first, drawn from scratch
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert again.screen.current is not None and again.screen.current.query == upcoming.query
        assert screen_rows(again, 2, 38) == kept
