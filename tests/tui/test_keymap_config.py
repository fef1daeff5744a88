"""`[keymap]` mistakes are errors naming the key, before the app starts."""

from __future__ import annotations

import pytest

from curator.errors import ConfigError
from curator.tui.keymap import binding_groups, check_keymap


def test_the_default_bindings_and_a_plain_remap_pass() -> None:
    check_keymap({})
    check_keymap({"keep": "y", "bin": "k"})  # keep moved away first: k is free for bin
    assert any(b.id == "keep" for _, bindings in binding_groups() for b in bindings)


def test_an_unknown_id_is_named_with_its_closest_match() -> None:
    with pytest.raises(ConfigError, match=r"\[keymap\] 'kep' is not a binding id; did you mean 'keep'\?"):
        check_keymap({"kep": "y"})


def test_a_key_given_to_two_actions_on_one_screen_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"gives 'k' to both 'keep' and 'bin' on the review card"):
        check_keymap({"bin": "k"})
    with pytest.raises(ConfigError, match=r"'ctrl\+q'"):
        check_keymap({"undo": "u,ctrl+q"})


def test_curator_review_refuses_a_bad_keymap_with_the_message(run_cli, ws) -> None:
    (ws.root / "curator.toml").write_text('[keymap]\nkep = "y"\n')
    result = run_cli(["review"], cwd=ws.root)
    assert result.exit_code == 1 and "'kep' is not a binding id" in result.output
    assert "Traceback" not in result.output
