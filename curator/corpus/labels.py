"""Labels that point at passage ids the current corpus no longer has.

A document that changes (a section removed or merged away, a file renamed, an id scheme
changed by a new chunker) can leave a case labelled with an id that only exists in
history, or nowhere. `stale_labels(ws, cases)` finds them and, where the old passage's
heading is still in its document, names the current passage holding it, so `verify`,
`status` and the review browser can offer a relabel instead of silently not matching.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from curator.corpus.blocks import heading_slug
from curator.problems import Problem

if TYPE_CHECKING:
    from curator.models import Case
    from curator.questionset import QuestionSet
    from curator.workspace import Workspace

__all__ = ["StaleLabel", "stale_label_problems", "stale_labels"]


@dataclass
class StaleLabel:
    query_id: str
    passage_id: str
    in_history: bool  # the id exists in an older revision (else nowhere in the corpus)
    heading_path: list[str] = field(default_factory=list)  # the old passage's, when known
    replacement: str | None = None  # the current passage holding that heading, if any

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        where = "only in history" if self.in_history else "not in the corpus"
        hint = f"; now in {self.replacement}" if self.replacement else ""
        return f"{self.query_id}: passage {self.passage_id!r} is {where}{hint}"


def stale_labels(ws: Workspace, cases: Iterable[Case]) -> list[StaleLabel]:
    """The labels of active `cases` whose passage id is not in the current corpus, in case
    order; each with the current passage that holds the old heading, when there is one."""
    labelled: list[tuple[str, str]] = []
    for case in cases:
        if case.status != "active":
            continue
        labelled.extend((case.query_id, rel.id) for rel in case.relevant)
    if not labelled:
        return []
    wanted = {pid for _, pid in labelled}
    current = ws.current_passage_ids(wanted)
    missing = wanted - current
    if not missing:
        return []
    found: dict[str, tuple[bool, list[str], str | None]] = {}
    resolved = ws.resolve_passage_ids(missing)
    for pid in sorted(missing):
        old = ws.passage(pid)
        heading_path = list(old.heading_path) if old else []
        replacement = _same_heading(ws, old.doc_id, heading_path) if old else None
        if replacement is None and resolved.get(pid, pid) != pid:
            replacement = resolved[pid]
        found[pid] = (old is not None, heading_path, replacement)
    out = []
    for query_id, pid in labelled:
        if pid in found:
            in_history, heading_path, replacement = found[pid]
            out.append(StaleLabel(query_id, pid, in_history, heading_path, replacement))
    return out


def _same_heading(ws: Workspace, doc_id: str, heading_path: list[str]) -> str | None:
    """The current passage of `doc_id` whose heading path is `heading_path` (status words
    such as "[Deprecated]" ignored), or the one whose text holds its last heading."""
    if not heading_path:
        return None
    key = [heading_slug(h) for h in heading_path]
    holder = None
    for passage in ws.passages(doc_id=doc_id):
        if [heading_slug(h) for h in passage.heading_path] == key:
            return passage.id
        if holder is None and _holds_heading(passage.text, heading_path[-1]):
            holder = passage.id
    return holder


def _holds_heading(text: str, heading: str) -> bool:
    slug = heading_slug(heading)
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and heading_slug(stripped.lstrip("#").strip()) == slug:
            return True
    return False


def stale_label_problems(ws: Workspace, qs: QuestionSet) -> list[Problem]:
    """`verify`'s warnings for labels on ids that exist only in an older revision (ids in
    no revision at all are verify's own "not in the corpus" check)."""
    if not qs.exists():
        return []
    stale = stale_labels(ws, qs.read().cases.values())
    return [Problem(str(qs.cases_path), None, s.describe(), fatal=False) for s in stale if s.in_history]
