"""Prompt templates: bundled defaults, workspace overrides, strict loading, missing variables."""

from __future__ import annotations

import pytest

from curator.errors import InputError
from curator.generate.prompts import (
    MissingVariables,
    combined_output,
    load_template,
    load_templates,
)
from tests.conftest import write

TEMPLATE = """\
name = "paraphrase"
version = "7"
slice = "paraphrase"
input = "passage"
questions = 1
output = "question"
system = "You write questions."
user = "{user}"
"""


def test_bundled_templates_cover_every_default_slice():
    templates = load_templates(None)
    assert set(templates) == {"exact_identifier", "paraphrase", "multi_hop", "negative", "freshness"}
    assert templates["multi_hop"].input == "group"
    assert templates["freshness"].input == "revisions"
    # every template has a distinct, stable content hash
    hashes = {t.hash for t in templates.values()}
    assert len(hashes) == 5
    assert load_templates(None)["paraphrase"].hash == templates["paraphrase"].hash


def test_workspace_prompt_overrides_the_bundled_one(tmp_path):
    write(tmp_path, {"paraphrase.toml": TEMPLATE.format(user="Ask {questions} question(s).")})
    templates = load_templates(tmp_path)
    assert templates["paraphrase"].version == "7"
    assert templates["paraphrase"].hash != load_templates(None)["paraphrase"].hash
    assert templates["negative"].version == "1"  # others still bundled


def test_unknown_variable_is_an_error_naming_file_and_variable(tmp_path):
    path = write(tmp_path, {"paraphrase.toml": TEMPLATE.format(user="About {product_name}.")}) / "paraphrase.toml"
    with pytest.raises(MissingVariables) as err:
        load_template(path)
    assert "paraphrase.toml" in err.value.message
    assert "{product_name}" in err.value.message


def test_render_with_a_missing_variable_raises_never_blanks(tmp_path):
    path = write(tmp_path, {"p.toml": TEMPLATE.format(user="Ask {questions} about {heading}.")}) / "p.toml"
    template = load_template(path)
    with pytest.raises(MissingVariables, match="heading"):
        template.render({"questions": 1})
    assert template.render({"questions": 2, "heading": "Disk"})[1] == "Ask 2 about Disk."


def test_unknown_key_and_bad_toml_name_the_file(tmp_path):
    write(tmp_path, {"a.toml": TEMPLATE.format(user="x") + 'temprature = 0.3\n', "b.toml": "name = \n"})
    with pytest.raises(InputError, match=r"a\.toml.*temprature"):
        load_template(tmp_path / "a.toml")
    with pytest.raises(InputError, match=r"b\.toml"):
        load_template(tmp_path / "b.toml")


def test_two_templates_for_one_slice_in_one_folder_is_an_error(tmp_path):
    write(tmp_path, {"one.toml": TEMPLATE.format(user="x"), "two.toml": TEMPLATE.format(user="y")})
    with pytest.raises(Exception, match="both prompts for slice 'paraphrase'"):
        load_templates(tmp_path)


def test_combined_output_schema_is_strict():
    templates = load_templates(None)
    model = combined_output((templates["exact_identifier"], templates["paraphrase"]))
    schema = model.model_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"exact_identifier", "paraphrase"}
    ok = model.model_validate(
        {"exact_identifier": [{"question": "q", "identifier": "X-1", "rationale": "r"}], "paraphrase": []}
    )
    assert ok.exact_identifier[0].identifier == "X-1"
    with pytest.raises(ValueError):
        model.model_validate({"exact_identifier": [], "paraphrase": [], "extra": 1})
