"""Domain models shared by every part of curator.

Case and ChangeEntry are the records of `cases.jsonl` and `changelog.jsonl`
(docs/formats.md); they forbid unknown fields so that `curator verify` catches typos.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from types import UnionType
from typing import (  # pydantic needs these on 3.11
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
)

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from typing_extensions import TypedDict

Role = Literal["primary", "secondary"]
CaseStatus = Literal["active", "retired"]
ChangeAction = Literal["add", "relabel", "edit", "reslice", "retire"]
CandidateState = Literal["pending", "kept", "binned", "skipped"]
SourceKind = Literal["log", "generated", "manual", "triage"]

GRADE_FOR_ROLE: dict[str, int] = {"primary": 2, "secondary": 1}


def utcnow() -> str:
    """UTC time as an ISO-8601 string with a `Z`, second precision."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# JSON parsing caches only keys: the values of a set's lines (queries, ids, times) are mostly
# unique, and caching them made `curator verify` ~10% slower.
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", cache_strings="keys")


class Relevant(_Strict):
    id: str = Field(min_length=1)
    role: Role = "primary"
    grade: int | None = Field(None, ge=0, le=3)
    revision: str | None = None

    @model_validator(mode="after")
    def _default_grade(self) -> Relevant:
        if self.grade is None:
            self.grade = GRADE_FOR_ROLE[self.role]
        return self


class Freshness(_Strict):
    revision: str | None = None
    max_age_days: int | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _one_constraint(self) -> Freshness:
        if self.revision is None and self.max_age_days is None:
            raise ValueError("freshness needs a revision or max_age_days")
        return self


class CaseSource(BaseModel):
    """Where a case came from. Known keys are typed; others are kept as they are."""

    model_config = ConfigDict(extra="allow", cache_strings="keys")
    kind: SourceKind = "manual"
    count: int | None = None
    first_seen: str | None = None
    last_seen: str | None = None
    candidate_id: int | None = None


def labels_problem(status: str, expect_empty: bool, passages: list[tuple[str, str]]) -> str | None:
    """What is wrong with a case's labels ((passage id, role) pairs), or None: the rule of
    `Case` and of its fast line check (`line_check`)."""
    if status == "active":
        if expect_empty and passages:
            return "a case with expect_empty must not list relevant passages"
        if not expect_empty and not any(role == "primary" for _, role in passages):
            return "an active case needs a primary passage or expect_empty"
    if len(passages) > 1 and len({pid for pid, _ in passages}) != len(passages):
        return "a passage is listed twice in relevant"
    return None


class Case(_Strict):
    query_id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9-]*$")
    rev: int = Field(1, ge=1)
    query: str = Field(min_length=1)
    slice: str = Field(min_length=1)
    status: CaseStatus = "active"
    relevant: list[Relevant] = Field(default_factory=list)
    require_all: bool = False
    max_rank: int | None = Field(None, ge=1)
    expect_empty: bool = False
    freshness: Freshness | None = None
    explanation: str = ""
    source: CaseSource = Field(default_factory=CaseSource)
    tags: list[str] = Field(default_factory=list)
    reviewer: str = ""
    at: str = Field(default_factory=utcnow)

    @model_validator(mode="after")
    def _labels_agree(self) -> Case:
        problem = labels_problem(self.status, self.expect_empty, [(rel.id, rel.role) for rel in self.relevant])
        if problem:
            raise ValueError(problem)
        return self

    @property
    def primaries(self) -> list[Relevant]:
        return [r for r in self.relevant if r.role == "primary"]

    def line(self) -> str:
        return self.model_dump_json(exclude_none=True)


class ChangeEntry(_Strict):
    at: str = Field(default_factory=utcnow)
    query_id: str
    rev: int = Field(ge=1)
    action: ChangeAction
    reason: str = ""
    reviewer: str = ""
    versions: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _reason_required(self) -> ChangeEntry:
        if self.action != "add" and not self.reason.strip():
            raise ValueError(f"a {self.action} needs a reason")
        return self

    def line(self) -> str:
        return self.model_dump_json()


# ---- checking lines without building models ----------------------------------------------
#
# `curator verify` schema-checks every line of a set and uses few of them. `line_check(Case)`
# validates a line against a TypedDict made from the model's fields (the same FieldInfo:
# types, constraints, defaults; the same `extra` setting), then runs the model's rules on the
# plain values: about a third cheaper than building the model. Only acceptance is fast: a
# line it refuses goes to the model itself, so every error is the model's own.


def _case_rules(case: dict[str, Any]) -> bool:
    freshness = case["freshness"]
    if freshness is not None and freshness["revision"] is None and freshness["max_age_days"] is None:
        return False  # Freshness._one_constraint
    # Relevant._default_grade only fills in a grade: it rejects nothing.
    passages = [(rel["id"], rel["role"]) for rel in case["relevant"]]
    return labels_problem(case["status"], case["expect_empty"], passages) is None


def _change_rules(entry: dict[str, Any]) -> bool:
    return entry["action"] == "add" or bool(entry["reason"].strip())  # _reason_required


# The validators line_check mirrors, per model: adding one to a model without teaching the
# rules above about it must fail loudly, not let verify accept what the model rejects.
_MIRRORED: dict[type[BaseModel], set[str]] = {
    Case: {"_labels_agree"},
    Relevant: {"_default_grade"},
    Freshness: {"_one_constraint"},
    CaseSource: set(),
    ChangeEntry: {"_reason_required"},
}


@cache
def line_check(model: type[Case] | type[ChangeEntry]) -> Callable[[bytes | str], dict[str, Any]]:
    """A function from a JSON line to its fields as a dict (with the fields' defaults, not
    what validators compute, such as a passage's grade from its role) that raises the
    model's ValidationError for any line the model rejects."""
    validate = TypeAdapter(_record_type(model)).validator.validate_json
    rules = _case_rules if model is Case else _change_rules

    def check(line: bytes | str) -> dict[str, Any]:
        try:
            record = validate(line)
        except ValidationError:
            record = None
        if record is not None and rules(record):
            return record
        return model.model_validate_json(line).model_dump()

    return check


def _record_type(hint: Any) -> Any:
    """`hint` with every model in it replaced by a TypedDict of the same fields."""
    if isinstance(hint, type) and issubclass(hint, BaseModel):
        decorators = hint.__pydantic_decorators__
        validators = {*decorators.model_validators, *decorators.field_validators, *decorators.validators,
                      *decorators.root_validators}
        if hint not in _MIRRORED or validators != _MIRRORED[hint]:
            raise TypeError(f"line_check does not mirror the validators of {hint.__name__}: {sorted(validators)}")
        fields = {}
        for name, info in hint.model_fields.items():
            field_type = Annotated[_record_type(info.annotation), info]
            fields[name] = Required[field_type] if info.is_required() else NotRequired[field_type]
        record = TypedDict(f"{hint.__name__}Record", fields)  # type: ignore[operator]
        record.__pydantic_config__ = ConfigDict(extra=hint.model_config.get("extra"), cache_strings="keys")  # type: ignore[attr-defined]
        return record
    args = get_args(hint)
    if not args or get_origin(hint) is Literal:
        return hint
    if get_origin(hint) in (Union, UnionType):
        return Union[tuple(_record_type(arg) for arg in args)]  # noqa: UP007
    return get_origin(hint)[tuple(_record_type(arg) for arg in args)]


class Passage(BaseModel):
    id: str
    revision: str
    doc_id: str
    path: str | None = None
    url: str | None = None
    title: str | None = None
    heading_path: list[str] = Field(default_factory=list)
    text: str
    fingerprint: str
    tokens: int = 0
    committed_at: str | None = None
    is_current: bool = True
    ordinal: int = 0

    @property
    def heading(self) -> str:
        return " › ".join(self.heading_path)


class SearchHit(BaseModel):
    id: str
    revision: str
    heading_path: list[str] = Field(default_factory=list)
    title: str | None = None
    snippet: str
    score: float  # BM25 (higher is better)


class Suggestion(BaseModel):
    """A passage proposed as a label for a candidate, and why."""

    id: str
    role: Role = "primary"
    revision: str | None = None
    reason: str = ""  # "clicked", "hit", "generated from", "search"


class CandidateIn(BaseModel):
    """What an importer or generator hands to `Workspace.add_candidates`."""

    query: str = Field(min_length=1)
    source_kind: SourceKind
    suggested_slice: str | None = None
    suggestions: list[Suggestion] = Field(default_factory=list)
    provenance: dict[str, Any] = Field(default_factory=dict)
    rationale: str = ""
    count: int = 1
    expect_empty: bool = False  # generated negatives
    require_all: bool = False  # generated multi-hop


class Candidate(CandidateIn):
    id: int
    norm: str
    state: CandidateState = "pending"
    created_at: str
    updated_at: str
    query_id: str | None = None
    set_name: str | None = None


class Decision(BaseModel):
    id: int
    candidate_id: int
    action: str
    reviewer: str
    at: str
    set_name: str | None = None
    query_id: str | None = None
    detail: dict[str, Any] = Field(default_factory=dict)
