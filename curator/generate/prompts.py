"""Prompt templates: one TOML file per slice, loaded into strict pydantic models.

Defaults ship in the package (`curator.resources.bundled("prompts")`); a file with the
same name in the workspace's `prompts/` replaces the default. A template names the
variables it uses with `{name}`; rendering with a variable missing is an error, never a
blank. See docs/generate.md for the file format.
"""

from __future__ import annotations

import functools
import json
import string
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from curator.errors import CuratorError, InputError
from curator.models import validation_problems
from curator.text import sha256_hex

PromptInput = Literal["passage", "revisions", "group"]


class PromptError(CuratorError):
    pass


class MissingVariables(PromptError):
    """A template uses a variable the caller did not supply."""


# ---- output schemas (what the model must return, per slice) -----------------------------


class _Out(BaseModel):
    # Strict structured outputs need every field required and no extra keys.
    model_config = ConfigDict(extra="forbid")


class Question(_Out):
    question: str = Field(description="The question, as a user would type it into search.")
    rationale: str = Field(description="One short sentence for the reviewer: why this is a good test.")


class IdentifierQuestion(_Out):
    question: str = Field(description="The question; it must contain the identifier verbatim.")
    identifier: str = Field(description="The identifier from the list, exactly as written.")
    rationale: str = Field(description="One short sentence for the reviewer.")


class FreshnessQuestion(_Out):
    question: str = Field(description="A question whose answer changed between the revisions.")
    old_answer: str = Field(description="The answer according to the previous revision.")
    new_answer: str = Field(description="The answer according to the current revision.")
    rationale: str = Field(description="One short sentence: what changed.")


class MultiHopQuestion(_Out):
    question: str = Field(description="A question that needs every listed passage to answer.")
    passages_used: list[str] = Field(description="The ids of the passages the answer needs.")
    rationale: str = Field(description="One short sentence: what each passage contributes.")


OUTPUTS: dict[str, type[_Out]] = {
    "question": Question,
    "identifier_question": IdentifierQuestion,
    "freshness_question": FreshnessQuestion,
    "multi_hop_question": MultiHopQuestion,
}


class PromptTemplate(BaseModel):
    """One prompt file. Unknown keys are errors, so a typo never goes unnoticed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[a-z0-9_][a-z0-9_-]*$")
    version: str = Field(min_length=1)
    slice: str = Field(min_length=1)
    input: PromptInput = "passage"
    description: str = ""
    questions: int = Field(2, ge=1, le=10)  # how many questions to ask for
    output: Literal["question", "identifier_question", "freshness_question", "multi_hop_question"]
    system: str = Field(min_length=1)
    user: str = Field(min_length=1)
    path: str = Field("", exclude=True)  # where it was loaded from (not hashed)

    @property
    def output_model(self) -> type[_Out]:
        return OUTPUTS[self.output]

    @property
    def variables(self) -> set[str]:
        return _fields(self.system) | _fields(self.user)

    @property
    def hash(self) -> str:
        """Content hash: changes whenever the text, settings or output schema change."""
        return _template_hash(self)

    def render(self, variables: dict[str, Any]) -> tuple[str, str]:
        """(system, user) with variables filled in; a missing one raises MissingVariables."""
        missing = self.variables - set(variables)
        if missing:
            raise _missing(self.path or self.name, missing, self.input, " Write `{{` for a literal brace.")
        values = {k: str(v) for k, v in variables.items()}
        return self.system.format_map(values), self.user.format_map(values)


# Which variables the pipeline supplies to each kind of prompt (checked at load time).
_COMMON = {"slice", "slice_description", "questions", "corpus_topics"}
VARIABLES: dict[str, set[str]] = {
    "passage": _COMMON | {"passage_id", "title", "heading", "document", "identifiers"},
    "revisions": _COMMON | {"passage_id", "title", "heading", "document", "current_revision",
                            "previous_revision", "current_date", "previous_date"},
    "group": _COMMON | {"passage_ids", "relation", "count"},
}


def _fields(text: str) -> set[str]:
    try:
        return {f for _, f, _, _ in string.Formatter().parse(text) if f}
    except ValueError as exc:
        raise PromptError(f"malformed template text: {exc}") from None


def load_template(path: Path) -> PromptTemplate:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"not a valid TOML prompt file: {exc}") from None
    try:
        template = PromptTemplate.model_validate({**data, "path": str(path)})
    except ValidationError as exc:
        raise InputError(str(path), f"invalid prompt template: {validation_problems(exc, 'file')}") from None
    try:
        unknown = template.variables - VARIABLES[template.input]
    except PromptError as exc:
        raise InputError(str(path), exc.message) from None
    if unknown:
        raise _missing(str(path), unknown, template.input)
    return template


def _missing(where: str, names: set[str], kind: str, tip: str = "") -> MissingVariables:
    return MissingVariables(
        f"{where}: prompt uses undefined variable(s) {', '.join('{' + n + '}' for n in sorted(names))}",
        f"Variables available to `input = \"{kind}\"` prompts: {', '.join(sorted(VARIABLES[kind]))}.{tip}",
    )


def load_templates(workspace_prompts: Path | None = None) -> dict[str, PromptTemplate]:
    """Every template by slice. A workspace template replaces the bundled one for its
    slice (and the bundled file of the same name)."""
    from curator.resources import bundled

    folders = [bundled("prompts")]
    if workspace_prompts is not None and workspace_prompts.is_dir():
        folders.append(workspace_prompts)
    by_slice: dict[str, PromptTemplate] = {}
    for folder in folders:
        here: dict[str, PromptTemplate] = {}
        for path in sorted(folder.glob("*.toml")):
            template = load_template(path)
            if template.slice in here:
                raise PromptError(
                    f"{path} and {here[template.slice].path} are both prompts for slice "
                    f"{template.slice!r}",
                    "Keep one template per slice.",
                )
            here[template.slice] = template
        stems = {Path(t.path).stem for t in here.values()}
        by_slice = {s: t for s, t in by_slice.items() if Path(t.path).stem not in stems}
        by_slice.update(here)
    return by_slice


@functools.lru_cache(maxsize=256)
def _template_hash(template: PromptTemplate) -> str:
    body = template.model_dump(exclude={"path"})
    body["schema"] = output_schema(template.output_model)
    return sha256_hex(json.dumps(body, sort_keys=True, ensure_ascii=False))[:16]


@functools.lru_cache(maxsize=64)
def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema, computed once (pydantic's is slow to build)."""
    return model.model_json_schema()


@functools.lru_cache(maxsize=64)
def combined_output(templates: tuple[PromptTemplate, ...]) -> type[BaseModel]:
    """The output model of one call that runs several slices' templates: a list per slice."""
    # list[...] of a model made at run time: a type mypy cannot name
    fields: dict[str, Any] = {t.slice: (list[t.output_model], ...) for t in templates}  # type: ignore[name-defined]
    model = create_model(
        "Questions_" + "_".join(t.slice for t in templates),
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return model


def combined_hash(templates: list[PromptTemplate]) -> str:
    return sha256_hex(
        json.dumps([FRAME_VERSION, *[t.hash for t in templates]])
    )[:16]


# Version of the way the pipeline frames templates into one call (passage blocks, task
# headings). Part of every call's prompt hash: changing the frame invalidates the cache.
FRAME_VERSION = "frame-1"
