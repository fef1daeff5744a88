"""The `[generate]` section of curator.toml (and CURATOR_GENERATE__* variables) sets the
defaults of `curator generate`; its flags override them."""

from __future__ import annotations

import json

import pytest

from curator.errors import ConfigError
from curator.workspace import Workspace
from tests.unit import generate_corpus

pytest_plugins = ["tests.fake_openai"]  # the `fake_openai` fixture


@pytest.fixture
def gws(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-CONFIG-0123456789")
    generate_corpus.load(ws, tmp_path)
    return ws


def configure(ws, toml: str) -> None:
    (ws.root / "curator.toml").write_text(toml, encoding="utf-8")


def cli(run_cli, ws, server, *args):
    result = run_cli(["-w", str(ws.root), "generate", "--base-url", server.url, "--json", *args])
    assert result.exit_code in (0, 3), result.output
    return json.loads(result.output)


def test_a_threshold_in_curator_toml_changes_the_checks_and_a_flag_overrides_it(
        gws, fake_openai, run_cli):
    configure(gws, "[generate]\nparaphrase_max_overlap = 0.0\nslices = [\"paraphrase\"]\n")
    strict = cli(run_cli, gws, fake_openai, "-n", "3")
    assert set(strict["by_slice"]) <= {"paraphrase"} and strict["candidates_added"] == 0
    assert strict["rejected"] == {"paraphrase: paraphrase too close to the passage's wording": 3}
    loose = cli(run_cli, gws, fake_openai, "-n", "3", "--seed", "1", "--paraphrase-max-overlap", "100")
    assert loose["by_slice"] == {"paraphrase": 3} and not loose["rejected"]


def test_environment_sets_generate_defaults_and_flags_win(gws, fake_openai, run_cli, monkeypatch):
    monkeypatch.setenv("CURATOR_GENERATE__PASSAGES", "2")
    monkeypatch.setenv("CURATOR_GENERATE__MULTI_HOP_RATIO", "0")
    by_env = cli(run_cli, gws, fake_openai)
    assert by_env["passages_selected"] == 2 and by_env["tasks"] == 2  # no multi-hop groups
    by_flag = cli(run_cli, gws, fake_openai, "-n", "4", "--multi-hop-ratio", "1")
    assert by_flag["passages_selected"] == 4 and by_flag["tasks"] > 4  # with groups


def test_duplicate_similarity_from_config(gws, fake_openai, run_cli):
    from tests.fake_openai import canned_answer

    def alike(body):  # paraphrases that differ in one word per passage
        answer = canned_answer(body)
        pid = body["messages"][1]["content"].split('id="', 1)[1].split('"', 1)[0]
        answer["paraphrase"] = [{"question": f"how do operators escalate a stuck {pid[:3]} shipment",
                                 "rationale": "r"}]
        return answer

    fake_openai.responder = alike
    configure(gws, "[generate]\nslices = [\"paraphrase\"]\nduplicate_similarity = 50.0\n")
    loose = cli(run_cli, gws, fake_openai, "-n", "4")
    assert loose["candidates_added"] == 1
    assert loose["rejected"] == {"near-duplicate of an existing question": 3}


def test_an_invalid_generate_value_names_the_file_and_key(gws):
    configure(gws, "[generate]\ngroup_size = 4\n")
    with pytest.raises(ConfigError, match=r"curator\.toml: invalid configuration: generate\.group_size"):
        Workspace.open(gws.root)
