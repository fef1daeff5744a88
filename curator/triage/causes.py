"""The causes a reviewer names for a failing case, and what each does to the case.

`bad_label` saves the labels edited on the card (a `relabel` rev); `stale_metadata`
re-pins the labels to a revision (a `relabel` rev); the others keep the case as it is
and tag it `regression` (an `edit` rev), so the next freeze holds it. Each function
returns the fields of the new rev; undoing one restores what it changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.models import Case

if TYPE_CHECKING:
    from curator.workspace import Workspace

# Cause -> its label on the card. The order is the order of the keys on the card.
CAUSES: dict[str, str] = {
    "bad_label": "bad label",
    "missing_chunk": "missing chunk",
    "synonym_gap": "synonym gap",
    "stale_metadata": "stale metadata",
    "ranking_tie": "ranking tie",
    "retrieval_miss": "retrieval miss",
}
# Cause -> what it does to the case: every cause but these two tags it `regression`.
ACTION_OF = {cause: {"bad_label": "relabel", "stale_metadata": "repin"}.get(cause, "regression") for cause in CAUSES}
REGRESSION_TAG = "regression"


def reason(cause: str, note: str, run: str) -> str:
    """The changelog's reason for a decision."""
    text = f"triage {cause} ({run})"
    return f"{text}: {note.strip()}" if note.strip() else text


def relabel(labels: dict[str, str], case: Case) -> dict[str, Any]:
    """The case's labels as edited on the card (passage id -> role); a label whose role
    did not change keeps its grade and revision, a changed one keeps its revision."""
    old = {r.id: r for r in case.relevant}
    relevant = []
    for pid, role in labels.items():
        kept = old.get(pid)
        if kept is not None and kept.role == role:
            relevant.append(kept.model_dump(exclude_none=True))
        else:
            entry: dict[str, Any] = {"id": pid, "role": role}
            if kept is not None and kept.revision:
                entry["revision"] = kept.revision
            relevant.append(entry)
    return {"relevant": relevant, "expect_empty": False if relevant else case.expect_empty}


def repin(ws: Workspace, case: Case, revision: str | None, passage: str | None,
          confirm_older: bool = False) -> dict[str, Any]:
    """Pin the case's labels (the pinned ones, else the primaries; only `passage` if given)
    to `revision`, or to each passage's current revision in the corpus. A `revision` older
    than the corpus's current one is refused (the message names both dates) unless
    `confirm_older`: a case pinned to an old revision can never catch a stale ranking."""
    pinned = [r for r in case.relevant if r.revision] or case.primaries
    if passage is not None:
        pinned = [r for r in pinned if r.id == passage] or [r for r in case.relevant if r.id == passage]
    if not pinned:
        raise CuratorError(f"{case.query_id}: no labelled passage to re-pin")
    new_revs: dict[str, str] = {}
    for r in pinned:
        want = revision
        if want is None:
            current = [rev for rev, _, is_current in ws.revisions_of(r.id) if is_current]
            if not current:
                raise CuratorError(f"{case.query_id}: {r.id} is not in the corpus; cannot re-pin it")
            want = current[0]
        elif not confirm_older:
            _refuse_older(ws, case, r.id, want)
        new_revs[r.id] = want
    if all(r.revision == new_revs[r.id] for r in pinned) and (
        case.freshness is None or case.freshness.revision in (None, *new_revs.values())
    ):
        raise CuratorError(f"{case.query_id}: already pinned to {', '.join(sorted(set(new_revs.values())))}")
    relevant = []
    for r in case.relevant:
        data = r.model_dump(exclude_none=True)
        if r.id in new_revs:
            data["revision"] = new_revs[r.id]
        relevant.append(data)
    updates: dict[str, Any] = {"relevant": relevant}
    if case.freshness is not None and case.freshness.revision is not None:
        first = next((r.id for r in case.primaries if r.id in new_revs), None)
        if first is not None:
            updates["freshness"] = {"revision": new_revs[first]}
    return updates


def _refuse_older(ws: Workspace, case: Case, passage: str, revision: str) -> None:
    history = ws.revisions_of(passage)
    current = next(((rev, when) for rev, when, is_current in history if is_current), None)
    if current is None or current[0].startswith(revision) or revision.startswith(current[0]):
        return
    when = next((w for rev, w, _ in history if rev.startswith(revision) or revision.startswith(rev)), None)
    if when is not None and current[1] is not None and when > current[1]:
        return  # newer than the current one (a branch ahead of the index)
    raise CuratorError(
        f"{case.query_id}: {revision[:12]} ({when or 'date unknown'}) is older than the corpus's current "
        f"revision {current[0][:12]} ({current[1] or 'date unknown'}) of {passage}; pinning to it needs a confirmation"
    )


def tag_regression(case: Case) -> dict[str, Any] | None:
    """The regression tag added; None when the case already has it."""
    if REGRESSION_TAG in case.tags:
        return None
    return {"tags": [*case.tags, REGRESSION_TAG]}


def undo_change(action: str, before: Case, latest: Case) -> dict[str, Any]:
    """What takes back `action`: the tag it added, or the labels, pins and expect_empty
    of the rev `before` it."""
    if action == "regression":
        return {"tags": [t for t in latest.tags if t != REGRESSION_TAG or t in before.tags]}
    return {
        "relevant": [r.model_dump(exclude_none=True) for r in before.relevant],
        "freshness": before.freshness.model_dump(exclude_none=True) if before.freshness else None,
        "expect_empty": before.expect_empty,
    }
