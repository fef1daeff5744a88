"""`?`: every binding of the review card and the set browser, with its id for the keymap."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark,q", "close", "Close", id="help-close", tooltip="Back to where you were"),
    ]

    def __init__(self, sections: list[tuple[str, list[Binding]]], keymap: dict[str, str]):
        super().__init__()
        self.sections, self.keymap = sections, keymap

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Content.from_markup(
                "[b]Keys[/b] · remap in curator.toml: [b]\\[keymap][/b] id = \"keys\" · "
                "Escape, ? or q closes · ctrl+q quits"), id="help-title")
            for screen, bindings in self.sections:
                lines = [Content.from_markup("\n[b $accent]$s[/]", s=screen)]
                lines += [self._line(b) for b in bindings]
                yield Static(Content("\n").join(lines), classes="help-section")

    def _line(self, b: Binding) -> Content:
        keys = _keys(self.keymap.get(b.id or "", b.key))
        return Content.from_markup(
            "  [b]$keys[/b] [dim]$id[/] $what", keys=f"{keys:<9}", id=f"{b.id or '':<16}",
            what=b.tooltip or b.description,
        )

    def action_close(self) -> None:
        self.dismiss(None)


_NAMES = {"question_mark": "?", "slash": "/", "escape": "esc"}


def _keys(keys: str) -> str:
    return ",".join(_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))
