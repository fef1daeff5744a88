"""`curator verify`: every check over the workspace's question sets.

Later checks (frozen subsets) plug in through `EXTRA_CHECKS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from curator.questionset import QuestionSet, VerifyReport, verify

if TYPE_CHECKING:
    from curator.workspace import Workspace

# Functions (ws, question_set, report) -> None that add problems to the report.
EXTRA_CHECKS: list[Callable[[Workspace, QuestionSet, VerifyReport], None]] = []


def verify_workspace(ws: Workspace, names: list[str], *, strict: bool = False) -> list[VerifyReport]:
    reports = []
    for name in names:
        qs = ws.question_set(name)
        report = verify(qs, known_ids=ws.existing_passage_ids, strict=strict)
        for check in EXTRA_CHECKS:
            check(ws, qs, report)
        if report.ok and report.scan is not None:
            qs.save_checkpoint(report.scan)
        reports.append(report)
    return reports


def _freeze_check(ws: Workspace, qs: QuestionSet, report: VerifyReport) -> None:
    from curator.freeze import verify_check

    verify_check(ws, qs, report)


EXTRA_CHECKS.append(_freeze_check)
