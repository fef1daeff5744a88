"""Inter-reviewer agreement (`curator agreement`): the first decisions of a set against
the blind second judgments (curator.judgments), per slice and overall.

Each pair is one item (a kept case at the rev judged, or a binned candidate) with the
first reviewer's decision and one second reviewer's. Per slice (the first reviewer's;
a binned candidate's suggested slice) and overall:

- `decision`: Cohen's kappa on keep/bin, over every pair;
- `slice`: Cohen's kappa on the slice, over the pairs both kept;
- `grades`: linearly weighted kappa on graded relevance (0 unlabelled, 1-3 as labelled)
  per (item, passage), over the passages either reviewer labelled in the pairs both kept;
- `primary_jaccard`: the mean Jaccard overlap of the two primary sets (two negatives,
  both empty, agree fully), over the pairs both kept;
- each with its raw agreement (the share of equal labels) and its count.

A kappa is None where it is undefined: no pairs, or both reviewers gave one and the same
label throughout (chance agreement is then 1). Pure functions over what the files hold;
docs/review.md ("Agreement") says how to read the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from curator import judgments
from curator.judgments import Judgment

if TYPE_CHECKING:
    from curator.workspace import Workspace

ADJUDICATED = "adjudicated"  # the change-log reason a resolution starts with
GRADES = [0, 1, 2, 3]


def cohen_kappa(first: Sequence[Any], second: Sequence[Any], *, scale: Sequence[Any] | None = None,
                weighted: bool = False) -> float | None:
    """Cohen's kappa of two raters' labels (same length). `weighted`: linear weights by
    the distance of the labels' positions on `scale` (ordered; default: the labels sorted),
    as scikit-learn's `cohen_kappa_score(weights="linear", labels=scale)`."""
    if len(first) != len(second):
        raise ValueError("both raters need a label for every item")
    if not first:
        return None
    labels = list(scale) if scale is not None else sorted(set(first) | set(second), key=str)
    index = {label: i for i, label in enumerate(labels)}
    size, n = len(labels), len(first)
    observed = [[0.0] * size for _ in range(size)]
    for a, b in zip(first, second, strict=True):
        observed[index[a]][index[b]] += 1
    rows = [sum(row) for row in observed]
    cols = [sum(observed[i][j] for i in range(size)) for j in range(size)]
    disagree = expected = 0.0
    for i in range(size):
        for j in range(size):
            weight = abs(i - j) if weighted else float(i != j)
            disagree += weight * observed[i][j]
            expected += weight * rows[i] * cols[j] / n
    if expected == 0:
        return None
    return 1 - disagree / expected


def jaccard(a: set[str], b: set[str]) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


@dataclass
class Side:
    """One reviewer's decision of an item."""

    reviewer: str
    decision: str  # keep | bin
    slice: str | None = None
    grades: dict[str, int] = field(default_factory=dict)  # passage id -> grade
    primaries: list[str] = field(default_factory=list)
    expect_empty: bool = False


@dataclass
class Pair:
    target: str
    query: str
    group: str  # the slice it is counted under
    first: Side
    second: Side
    rev: int | None = None
    judgment: Judgment | None = field(default=None, repr=False)
    settled: str | None = None  # the reason of a judgments.jsonl adjudication that settles it

    @property
    def query_id(self) -> str | None:
        kind, _, key = self.target.partition(":")
        return key if kind == "case" else None

    def differences(self) -> list[str]:
        """What the two reviewers did differently: decision, slice, primaries, grades."""
        if self.first.decision != self.second.decision:
            return ["decision"]
        if self.first.decision == "bin":
            return []
        found = []
        if self.first.slice != self.second.slice:
            found.append("slice")
        if set(self.first.primaries) != set(self.second.primaries) or self.first.expect_empty != self.second.expect_empty:
            found.append("primaries")
        if self.first.grades != self.second.grades:
            found.append("grades")
        return found


@dataclass
class Figures:
    """Agreement over a group of pairs."""

    pairs: int = 0
    decision_kappa: float | None = None
    decision_agreement: float | None = None
    both_kept: int = 0
    slice_kappa: float | None = None
    slice_agreement: float | None = None
    graded_pairs: int = 0  # (item, passage) pairs
    grade_kappa: float | None = None
    grade_agreement: float | None = None
    primary_jaccard: float | None = None


@dataclass
class Disagreement:
    target: str
    query_id: str | None
    query: str
    rev: int | None
    differences: list[str]
    first: Side
    second: Side
    resolved: str | None = None  # the change-log reason that settled it
    judgment: Judgment | None = field(default=None, repr=False)  # the second side in full


@dataclass
class AgreementReport:
    set_name: str
    reviewers: list[str]
    overall: Figures
    per_slice: dict[str, Figures]
    disagreements: list[Disagreement]
    problems: list[str] = field(default_factory=list)  # judgments.jsonl lines not read, as file:line: what

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for d in out["disagreements"]:
            del d["judgment"]
        return out


def figures(pairs: list[Pair]) -> Figures:
    out = Figures(pairs=len(pairs))
    if not pairs:
        return out
    out.decision_kappa = cohen_kappa([p.first.decision for p in pairs], [p.second.decision for p in pairs])
    out.decision_agreement = _share([p.first.decision == p.second.decision for p in pairs])
    kept = [p for p in pairs if p.first.decision == p.second.decision == "keep"]
    out.both_kept = len(kept)
    if not kept:
        return out
    first_slices, second_slices = [p.first.slice or "" for p in kept], [p.second.slice or "" for p in kept]
    out.slice_kappa = cohen_kappa(first_slices, second_slices)
    out.slice_agreement = _share([a == b for a, b in zip(first_slices, second_slices, strict=True)])
    first_grades, second_grades = grade_pairs(kept)
    out.graded_pairs = len(first_grades)
    if first_grades:
        out.grade_kappa = cohen_kappa(first_grades, second_grades, scale=GRADES, weighted=True)
        out.grade_agreement = _share([a == b for a, b in zip(first_grades, second_grades, strict=True)])
    out.primary_jaccard = sum(jaccard(set(p.first.primaries), set(p.second.primaries)) for p in kept) / len(kept)
    return out


def grade_pairs(kept: list[Pair]) -> tuple[list[int], list[int]]:
    """The two grades of every (item, passage) either reviewer labelled (0: not labelled)."""
    first: list[int] = []
    second: list[int] = []
    for pair in kept:
        for pid in sorted(set(pair.first.grades) | set(pair.second.grades)):
            first.append(pair.first.grades.get(pid, 0))
            second.append(pair.second.grades.get(pid, 0))
    return first, second


def _share(flags: list[bool]) -> float:
    return sum(flags) / len(flags)


# ---- from the files ------------------------------------------------------------------


def pairs_of(ws: Workspace, set_name: str, problems: list[str] | None = None
             ) -> tuple[list[Pair], dict[str, tuple[int, str]]]:
    """Every (first decision, standing second judgment) pair of the set, and the latest
    `adjudicated` change-log entry of each case a resolution revised (query_id -> (rev,
    reason)). Lines of judgments.jsonl that are no judgment go to `problems`."""
    qs = ws.question_set(set_name)
    history = qs.read().history if qs.exists() else {}
    adjudicated: dict[str, tuple[int, str]] = {}
    if qs.exists():
        for entry in qs.changelog():
            if entry.reason.startswith(ADJUDICATED):
                adjudicated[entry.query_id] = (entry.rev, entry.reason)
    pairs: list[Pair] = []
    file = judgments.read(judgments.path_of(qs))
    if problems is not None:
        problems.extend(str(p) for p in file.problems)
    for judgment in file.standing().values():
        pair = _pair(ws, judgment, history)
        if pair is not None:
            adjudication = file.settled(judgment.target, judgment.reviewer)
            pair.settled = adjudication.reason if adjudication is not None else None
            pairs.append(pair)
    pairs.sort(key=lambda p: (p.target, p.second.reviewer))
    return pairs, adjudicated


def _pair(ws: Workspace, judgment: Judgment, history: dict[str, list[Any]]) -> Pair | None:
    second = Side(judgment.reviewer, judgment.decision, judgment.slice,
                  {r.id: r.grade or 0 for r in judgment.relevant},
                  [r.id for r in judgment.relevant if r.role == "primary"], judgment.expect_empty)
    query_id = judgment.query_id
    if query_id is not None:
        revs = history.get(query_id)
        if not revs:
            return None  # the case is not in this set (a judgment merged from elsewhere)
        case = next((c for c in revs if c.rev == judgment.rev), revs[-1])
        first = Side(judgment.first_reviewer or case.reviewer, "keep", case.slice,
                     {r.id: r.grade or 0 for r in case.relevant}, [r.id for r in case.primaries], case.expect_empty)
        return Pair(judgment.target, case.query, case.slice, first, second, case.rev, judgment)
    cand = ws.candidate(int(judgment.target.partition(":")[2]))
    group = cand.suggested_slice if cand is not None and cand.suggested_slice in ws.config.slices else None
    first = Side(judgment.first_reviewer, "bin")
    return Pair(judgment.target, judgment.query, group or "(no slice)", first, second, None, judgment)


def agreement(ws: Workspace, set_name: str | None = None) -> AgreementReport:
    """The agreement figures of one set (default: default_set)."""
    name = set_name or ws.config.default_set
    problems: list[str] = []
    pairs, adjudicated = pairs_of(ws, name, problems)
    groups: dict[str, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(pair.group, []).append(pair)
    reviewers = sorted({p.first.reviewer for p in pairs} | {p.second.reviewer for p in pairs})
    found = []
    kept_by_adjudication = _adjudicated_candidates(ws, name, adjudicated)
    for pair in pairs:
        differences = pair.differences()
        if differences:
            rev, reason = adjudicated.get(pair.query_id or "", (0, None))
            resolved = reason if pair.rev is not None and rev > pair.rev else None
            if pair.query_id is None:
                resolved = _candidate_resolution(pair, kept_by_adjudication)
            found.append(Disagreement(pair.target, pair.query_id, pair.query, pair.rev, differences,
                                      pair.first, pair.second, resolved, pair.judgment))
    ordered = [s for s in ws.config.slices if s in groups] + sorted(s for s in groups if s not in ws.config.slices)
    return AgreementReport(name, reviewers, figures(pairs), {s: figures(groups[s]) for s in ordered}, found,
                           problems)


def _adjudicated_candidates(ws: Workspace, set_name: str, adjudicated: dict[str, tuple[int, str]]) -> dict[int, str]:
    """candidate id -> the reason of the adjudication that made or revised its case."""
    if not adjudicated:
        return {}
    history = ws.question_set(set_name).read().history
    out: dict[int, str] = {}
    for query_id, (_, reason) in adjudicated.items():
        revs = history.get(query_id)
        if revs and revs[0].source.candidate_id is not None:
            out[revs[0].source.candidate_id] = reason
    return out


def _candidate_resolution(pair: Pair, kept: dict[int, str]) -> str | None:
    """What settled a disagreement on a binned candidate: its case made by an adjudication,
    or an adjudication line of judgments.jsonl (the bin confirmed) after the judgment."""
    candidate_id = int(pair.target.partition(":")[2])
    return kept.get(candidate_id, pair.settled)


def open_disagreements(ws: Workspace, set_name: str) -> dict[str, Disagreement]:
    """The set browser's `d` filter: unresolved disagreements, by query_id for a case and
    by target (`candidate:<id>`) for a binned candidate."""
    if not judgments.path_of(ws.question_set(set_name)).exists():
        return {}  # no second pass yet: nothing to read
    return {d.query_id or d.target: d for d in agreement(ws, set_name).disagreements if not d.resolved}
