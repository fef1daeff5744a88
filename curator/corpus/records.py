"""Plain records that corpus importers hand to `Workspace.import_documents`.

Dataclasses rather than pydantic models: an import can carry 100k+ passages.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
