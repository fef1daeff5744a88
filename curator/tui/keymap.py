"""`[keymap]` in curator.toml, checked before an app starts: every id must name a binding
(a typo such as `kep` would otherwise be ignored), and no key may do two things on one
screen (`bin = "k"` beside `keep = "k"` would make bin unreachable)."""

from __future__ import annotations

import difflib

from textual.binding import Binding

from curator.errors import ConfigError
from curator.tui.screens.browser import BrowserScreen
from curator.tui.screens.deciding import APP_KEYS, own_bindings
from curator.tui.screens.help import HelpScreen
from curator.tui.screens.modals import TextModal
from curator.tui.screens.review import ReviewScreen
from curator.tui.screens.revise import ReviseScreen
from curator.tui.screens.triage import TriageScreen
from curator.tui.widgets.passages import PassageList
from curator.tui.widgets.preview import PassageText


def binding_groups() -> list[tuple[str, list[Binding]]]:
    """The bindings that are live together, per screen or focused widget."""
    return [
        ("review card", own_bindings(ReviewScreen)),
        ("passages", own_bindings(PassageList)),
        ("preview", own_bindings(PassageText)),
        ("relabel", own_bindings(ReviseScreen)),
        ("browser", own_bindings(BrowserScreen)),
        ("text boxes", own_bindings(TextModal)),
        ("help", own_bindings(HelpScreen)),
        ("triage card", own_bindings(TriageScreen)),
    ]


def check_keymap(keymap: dict[str, str]) -> None:
    """Raise ConfigError naming the first `[keymap]` entry that is not a binding id, or a
    key that two bindings of one screen would share after the remapping."""
    groups = binding_groups()
    known = {b.id for _, bindings in [*groups, APP_KEYS] for b in bindings if b.id}
    for binding_id in keymap:
        if binding_id not in known:
            close = difflib.get_close_matches(binding_id, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "; `?` in curator review lists every id"
            raise ConfigError(f"curator.toml: [keymap] {binding_id!r} is not a binding id{hint}")
    for name, bindings in groups:
        owner: dict[str, str] = {}
        for binding in [*bindings, *APP_KEYS[1]]:
            if not binding.id:
                continue
            for key in (k.strip() for k in keymap.get(binding.id, binding.key).split(",")):
                other = owner.setdefault(key, binding.id)
                if other != binding.id and (binding.id in keymap or other in keymap):
                    raise ConfigError(
                        f"curator.toml: [keymap] gives {key!r} to both {other!r} and {binding.id!r} "
                        f"on the {name}; one of them could never be reached"
                    )
