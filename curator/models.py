"""Domain models shared by every part of curator.

Case and ChangeEntry are the records of `cases.jsonl` and `changelog.jsonl`
(docs/formats.md); they forbid unknown fields so that `curator verify` catches typos.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Role = Literal["primary", "secondary"]
CaseStatus = Literal["active", "retired"]
ChangeAction = Literal["add", "relabel", "edit", "reslice", "retire"]
CandidateState = Literal["pending", "kept", "binned", "skipped"]
SourceKind = Literal["log", "generated", "manual", "triage", "import"]

GRADE_FOR_ROLE: dict[str, int] = {"primary": 2, "secondary": 1}

# Recorded in every change-log entry (`Workspace.versions`); bump when the chunker cuts
# the same input into other chunks or gives them other ids.
CHUNKER_VERSION = "2"


def validation_problems(exc: ValidationError, whole: str = "", limit: int | None = None) -> str:
    """pydantic's errors as `a.b: message; ...` (`whole` names a problem with no location)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or whole}: {e['msg']}" for e in exc.errors()[:limit]
    )


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
    grade: int | None = Field(None, ge=0, le=3)  # None: the role's grade, set by `Case`
    revision: str | None = None


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
    kind: SourceKind | Literal["edited"] = "manual"  # edited: the original is nested
    count: int | None = None
    first_seen: str | None = None
    last_seen: str | None = None
    candidate_id: int | None = None


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
        # Runs for every line verify reads: one pass over `relevant`, no lists built. It also
        # gives each passage without a grade its role's (one Python call a case, not a passage).
        relevant = self.relevant
        primary = False
        for rel in relevant:
            primary = primary or rel.role == "primary"
            if rel.grade is None:
                rel.grade = GRADE_FOR_ROLE[rel.role]
        if self.status == "active":
            if self.expect_empty and relevant:
                raise ValueError("a case with expect_empty must not list relevant passages")
            if not self.expect_empty and not primary:
                raise ValueError("an active case needs a primary passage or expect_empty")
        if len(relevant) > 1 and len({rel.id for rel in relevant}) != len(relevant):
            raise ValueError("a passage is listed twice in relevant")
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


# ---- records the corpus importers hand to `Workspace.import_documents` -------------------
# Dataclasses rather than pydantic models: an import can carry 100k+ passages.


@dataclass(slots=True)
class PassageRecord:
    id: str
    text: str
    heading_path: list[str] = field(default_factory=list)
    tokens: int = 0
    ordinal: int = 0
    title: str | None = None


@dataclass(slots=True)
class DocRevision:
    """One revision of one document and the passages it was cut into."""

    doc_id: str
    revision: str
    passages: list[PassageRecord]
    committed_at: str | None = None
    path: str | None = None
    url: str | None = None
    title: str | None = None
    format: str = "markdown"
    # From a history walk: on a tie of commit times it does not displace the current one.
    historical: bool = False


@dataclass
class ImportReport:
    documents_new: int = 0
    documents_unchanged: int = 0
    revisions_added: int = 0
    history_revisions: int = 0  # revisions older than the current one, kept for freshness
    passages_added: int = 0
    skipped: list[tuple[str, int | None, str]] = field(default_factory=list)  # (file, line, why)

    def skip(self, path: str, why: str, line: int | None = None) -> None:
        self.skipped.append((str(path), line, why))

    def merge(self, other: ImportReport) -> None:
        self.documents_new += other.documents_new
        self.documents_unchanged += other.documents_unchanged
        self.revisions_added += other.revisions_added
        self.history_revisions += other.history_revisions
        self.passages_added += other.passages_added
        self.skipped.extend(other.skipped)
