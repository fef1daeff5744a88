"""Small modals: one line of text in (a reason, the question, an explanation, a search,
a max age). Enter submits, Escape cancels; a required value cannot be left empty."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class TextModal(ModalScreen[str | None]):
    """Ask for one line of text. Dismisses with the text, or None on Escape."""

    DEFAULT_CSS = """
    TextModal { align: center middle; }
    TextModal > Vertical {
        width: 80%; max-width: 100; height: auto;
        border: round $primary; background: $panel; padding: 0 1;
    }
    TextModal .hint { color: $text-muted; }
    TextModal .context { color: $text-muted; border-bottom: solid $primary 50%; }
    TextModal .error { color: $error; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="modal-cancel", tooltip="Close without changing anything")]

    def __init__(
        self,
        title: str,
        value: str = "",
        *,
        hint: str = "Enter to confirm, Escape to cancel",
        required: bool = False,
        check: Callable[[str], str | None] | None = None,
        placeholder: str = "",
        blink: bool = True,
        context: Content | None = None,
    ):
        """`context`: what the text is about (the card's question and highlighted passage),
        shown above the field, since the modal covers the card."""
        super().__init__()
        self.context = context
        self.title_text, self.value, self.hint = title, value, hint
        self.required, self.check, self.placeholder, self.blink = required, check, placeholder, blink

    def compose(self) -> ComposeResult:
        with Vertical():
            if self.context is not None:
                yield Static(self.context, classes="context", id="modal-context")
            yield Label(self.title_text)
            yield Input(self.value, placeholder=self.placeholder, id="modal-input")
            yield Label(self.hint, classes="hint")
            yield Label("", classes="error", id="modal-error")

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = self.blink
        field.focus()

    @on(Input.Submitted)
    def submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        problem = None
        if self.required and not text:
            problem = "required: this change needs a reason"
        elif self.check is not None:
            problem = self.check(text)
        if problem:
            self.query_one("#modal-error", Label).update(problem)
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


def reason_modal(what: str, blink: bool = True, context: Content | None = None) -> TextModal:
    return TextModal(f"Why {what}? (recorded in changelog.jsonl)", required=True,
                     placeholder="reason", blink=blink, context=context)



def check_reviewer_name(text: str) -> str | None:
    """A reviewer's name as the files record it: one short line, no `@` (the lease owner is
    `<name>@<session id>`)."""
    if not text:
        return "required: your name goes into every case and decision"
    if "@" in text or not text.isprintable() or len(text) > 64:
        return "a name of up to 64 printable characters, without @"
    return None
