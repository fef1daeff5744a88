"""`curator verify`: every check over a question set's files, and its checkpoints.

`verify(qs)` is the one entry point for a set (`verify_workspace` runs it over a
workspace's sets and records the checkpoints). Each file is read once, into a `SetScan`;
each check is a named function that reads the scan and adds `Problem`s to the report:

- the line checks of curator.linechecks: every cases.jsonl line is a valid case and each
  case's revs run 1, 2, 3...; every changelog.jsonl line is a valid entry; each case line
  has its change-log entry and the other way round; the checks on latest revs;
- the checks of curator.setchecks: bytes, a pending journal, change-log actions, merge
  conflicts, one case per candidate;
- `_check_labels`: the labelled passage ids of active cases are in the corpus;
- `_check_appended`: no committed line (git) or line the last checkpoint saw (without git)
  was edited, removed or reordered (curator.githistory, curator.checkpoint);
- `check_freezes`: the frozen subsets still match their manifests (curator.freezecheck).

A checkpoint (curator.checkpoint) remembers the files as a passing verify read them. Lines
a passing verify of this curator version checked, byte for byte unchanged since, get no
second schema check: their key (query_id, rev) is read off the line (curator writes it
first); when both files are exactly what it read, the line checks do not run at all
(`_as_checkpointed`), only the checks on latest revs and what lies outside the two files.
`require_sound`, the gate of the commands that build on a set, first tries the
checkpoint's incremental path (`checkpoint.advance`) and runs a full verify only when that
cannot prove the set sound.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from curator import __version__, checkpoint
from curator._process import paused_gc
from curator.appendonly import JsonLines, fingerprints
from curator.freezecheck import check_freezes
from curator.githistory import check_appended, file_history
from curator.judgments import JUDGMENTS
from curator.linechecks import (
    Facts,
    Key,
    Labels,
    check_cases,
    check_changelog,
    check_latest,
    check_pairing,
    check_torn,
    latest_lines,
)
from curator.models import Case
from curator.problems import Problem
from curator.questionset import QuestionSet, ReadResult
from curator.setchecks import (
    Duplicate,
    check_actions,
    check_bytes,
    check_conflicts,
    check_judgments,
    check_pending,
)

if TYPE_CHECKING:
    from curator.workspace import Workspace

KnownIds = Callable[[set[str]], set[str]]  # of the passage ids given, those in the corpus


@dataclass
class SetScan:
    """What one verify read of a set. Its checkpoint and the freeze checks use this instead of
    reading the files again, so they describe the files exactly as they were verified."""

    files: dict[str, JsonLines]  # cases.jsonl, changelog.jsonl, freezes.jsonl as read
    known: dict[str, list[int]]  # line fingerprints the checkpoint has for an intact prefix of a file
    query_ids: set[str]  # every query_id with a valid line in cases.jsonl
    revs: dict[str, int] = field(default_factory=dict)  # each case's highest rev
    retired: set[str] = field(default_factory=set)  # the cases whose latest line is retired
    _hashes: dict[str, list[int]] = field(default_factory=dict, repr=False)

    @property
    def cases(self) -> JsonLines:
        return self.files[CASES]

    @property
    def changelog(self) -> JsonLines:
        return self.files[CHANGELOG]

    def hashes(self, name: str) -> list[int]:
        """The fingerprint of each line of a file (`appendonly.fingerprints`; worked out once,
        the checkpoint's where it has them)."""
        if name not in self._hashes:
            file = self.files[name]
            known = self.known.get(name, [])[: file.count]
            self._hashes[name] = known + fingerprints(file.lines[len(known):])
        return self._hashes[name]


CASES, CHANGELOG = "cases.jsonl", "changelog.jsonl"


@dataclass
class VerifyReport:
    set_name: str
    cases: int = 0
    active: int = 0
    lines: int = 0
    problems: list[Problem] = field(default_factory=list)
    unknown_ids: dict[str, list[str]] = field(default_factory=dict)  # passage id -> query_ids
    notes: list[str] = field(default_factory=list)
    scan: SetScan | None = field(default=None, repr=False)  # what verify read (None if no set)
    history: str = "not checked: no history"  # what the append-only check rested on
    duplicates: list[Duplicate] = field(default_factory=list, repr=False)

    @property
    def first_problem(self) -> Problem | None:
        return next((p for p in self.problems if p.fatal), None)

    @property
    def ok(self) -> bool:
        return not any(p.fatal for p in self.problems)

    def to_dict(self) -> dict[str, Any]:
        return {
            "set": self.set_name,
            "ok": self.ok,
            "cases": self.cases,
            "active": self.active,
            "lines": self.lines,
            "problems": [asdict(p) for p in self.problems],
            "unknown_passage_ids": self.unknown_ids,
            "notes": self.notes,
            "append_only": self.history,
        }


def verify_workspace(ws: Workspace, names: list[str], *, strict: bool = False) -> list[VerifyReport]:
    """`verify` each named set against the workspace's corpus; record a checkpoint of each
    set that passes."""
    from curator.judgments import check_recorded

    reports = []
    has_corpus = ws.corpus_stats().passages > 0  # a fresh clone has no workspace.db corpus yet
    for name in names:
        qs = ws.question_set(name)
        if has_corpus:
            corpus = _CorpusIds(ws)
            report = verify(qs, known_ids=corpus.known, strict=strict,
                            more_label_checks=partial(_history_labels, ws, corpus, str(qs.cases_path)))
        else:
            report = verify(qs, strict=strict)
            if strict:
                report.problems.append(Problem(str(qs.cases_path), None, "--strict: the labels cannot be checked, "
                                               "this workspace has no corpus yet (curator corpus add)"))
            else:
                report.notes.append("labels not checked against the corpus: this workspace has none yet "
                                    "(curator corpus add)")
        if "commit" not in report.history:  # judgments.jsonl without git (issue 24)
            report.problems.extend(check_recorded(ws, qs))
        if report.ok and report.scan is not None:
            save_checkpoint(qs, report.scan)
        reports.append(report)
    return reports


class _CorpusIds:
    """The workspace's corpus as one verify asks it about the labelled ids of active cases:
    `known` (verify's `known_ids`) asks which are current passages, then which of the rest
    are in an older revision, and keeps the ids that are not current for `_history_labels`,
    which verify calls after it. One query over the ids, not one per check."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.not_current: set[str] = set()

    def known(self, ids: set[str]) -> set[str]:
        current = self.ws.current_passage_ids(ids)
        self.not_current = ids - current
        return current | self.ws.existing_passage_ids(self.not_current) if self.not_current else current


def _history_labels(ws: Workspace, corpus: _CorpusIds, where: str, labels: dict[str, Labels]) -> list[Problem]:
    """Warnings for labels on ids that exist only in an older revision of the corpus (ids
    in no revision at all are `_check_labels`' "not in the corpus"). `labels`: each case's
    (status, passage ids); only cases naming an id the current corpus lacks (as `corpus`
    found) are looked at."""
    missing = corpus.not_current
    if not missing:
        return []
    from curator.corpus.labels import stale_labels  # here: the corpus package is 40 ms of imports
    from curator.models import Relevant

    touched = [
        Case.model_construct(query_id=query_id, query="", slice="", status="active",
                             relevant=[Relevant.model_construct(id=p) for p in ids])
        for query_id, (status, ids) in labels.items() if status == "active" and missing.intersection(ids)
    ]
    return [Problem(where, None, s.describe(), fatal=False) for s in stale_labels(ws, touched) if s.in_history]


@paused_gc()
def verify(
    qs: QuestionSet, *, known_ids: KnownIds | None = None, strict: bool = False,
    more_label_checks: Callable[[dict[str, Labels]], list[Problem]] | None = None,
) -> VerifyReport:
    """Check a set's files: schema, rev order, change-log pairing, labelled passage ids (via
    `known_ids`; unknown ones are errors only with `strict`; `more_label_checks` gets the
    latest rev of every case), that no earlier line changed (against git, else the last
    checkpoint), and its freezes. The parsed cases are not kept in the report: a 50k-case
    set's would be half a million objects for the collector to scan after verify."""
    report = VerifyReport(qs.name)
    if not qs.exists():
        report.problems.append(Problem(str(qs.cases_path), None, "no such question set (file missing)"))
        return report
    record = checkpoint.load(qs)
    files = {name: JsonLines.read(qs.root / name) for name in checkpoint.FILES}
    cases, changelog = files[CASES], files[CHANGELOG]
    entries = record["files"] if record else {}
    intact = {name: name in entries and checkpoint.prefix_intact(file, entries[name]) for name, file in files.items()}
    check_pending(report.problems, qs.root / ".pending.json")
    for file in files.values():
        check_bytes(report.problems, file)
    facts: dict[str, Facts] = {}
    checked = _as_checkpointed(record, files, intact)
    latest, revs = _check_lines(report, qs, record, files, intact, facts) if checked is None else checked
    check_torn(report.problems, cases, changelog)
    report.lines = cases.count
    labels = check_latest(report.problems, cases, latest, facts)
    del facts
    _check_labels(report, str(qs.cases_path), labels, known_ids, strict)
    if more_label_checks is not None:
        report.problems.extend(more_label_checks(labels))
    known: dict[str, list[int]] = {}
    for name in files:
        if record and record.get("format") == checkpoint.FORMAT and intact[name]:
            known[name] = cast(list[int], checkpoint.line_hashes(qs, record, name))
    retired_ids = {query_id for query_id, (status, _) in labels.items() if status == "retired"}
    report.scan = SetScan(files, known, set(latest), revs, retired_ids)
    _check_appended(report, qs, record, intact)
    check_judgments(report.problems, qs.root)  # the second pass's judgments.jsonl (issue 24)
    infos, notes = check_freezes(qs, cases, fingerprints=report.scan.hashes(CASES),
                                 query_ids=report.scan.query_ids)
    for info in infos:
        report.problems.extend(info.problems)
    report.notes.extend(notes)
    return report


def _check_lines(
    report: VerifyReport, qs: QuestionSet, record: dict[str, Any] | None, files: dict[str, JsonLines],
    intact: dict[str, bool], facts: dict[str, Facts],
) -> tuple[dict[str, int], dict[str, int]]:
    """The line checks over cases.jsonl and changelog.jsonl (lines a checkpoint vouches for
    are not parsed again); gives each case's latest line index and highest rev."""
    cases, changelog = files[CASES], files[CHANGELOG]
    trusted = _trusted_keys(record, cases, intact[CASES], _KEY)
    case_keys, latest, revs, retired = check_cases(report.problems, report.duplicates, cases, trusted, facts)
    change_trusted = _trusted_keys(record, changelog, intact[CHANGELOG], _CHANGE_KEY)
    change_keys, actions = check_changelog(report.problems, changelog, change_trusted)
    check_pairing(report.problems, str(qs.cases_path), str(qs.changelog_path), case_keys, change_keys)
    # every change-log key is a case revision when the two lists are equal (as curator writes them)
    known_revisions = None if case_keys == change_keys else {key for key in case_keys if key is not None}
    check_actions(report.problems, str(qs.changelog_path), change_keys, actions, retired, known_revisions)
    check_conflicts(report.problems, str(qs.cases_path), report.duplicates, changelog)
    return latest, revs


def _as_checkpointed(
    record: dict[str, Any] | None, files: dict[str, JsonLines], intact: dict[str, bool]
) -> tuple[dict[str, int], dict[str, int]] | None:
    """When a passing verify of this curator version read exactly these cases.jsonl and
    changelog.jsonl bytes (the checkpoint's prefix is the whole of each file), the line
    checks (schema, revs, pairing, actions, conflicts) would find what it found: nothing.
    Gives each case's latest line index and highest rev as it recorded them, or None when
    the files are not exactly what it read (then the line checks run)."""
    if not record or record.get("format") != checkpoint.FORMAT or record.get("curator") != __version__:
        return None
    for name in (CASES, CHANGELOG):
        entry = record["files"].get(name)
        if not intact[name] or entry is None or int(entry["bytes"]) != files[name].size:
            return None
    latest = latest_lines(files[CASES])
    if latest is None:
        return None
    return latest, checkpoint.recorded_revs(record)


# ---- the checks --------------------------------------------------------------------------------


def _check_labels(
    report: VerifyReport, path: str, latest: dict[str, Labels], known_ids: KnownIds | None, strict: bool
) -> None:
    """Count the cases, and report the passage ids active cases name that the corpus lacks
    (errors with `strict`, else warnings)."""
    report.cases = len(latest)
    labelled: set[str] = set()
    for status, passage_ids in latest.values():
        if status == "active":
            report.active += 1
            labelled.update(passage_ids)
    if known_ids is None:
        return
    unknown = labelled - known_ids(labelled)
    if not unknown:
        return
    named: dict[str, list[str]] = {}  # which cases name them: only worked out when there are some
    for query_id, (status, passage_ids) in latest.items():
        for pid in unknown.intersection(passage_ids) if status == "active" else ():
            named.setdefault(pid, []).append(query_id)
    report.unknown_ids = dict(sorted(named.items()))
    for pid, qids in report.unknown_ids.items():
        report.problems.append(
            Problem(path, None, f"passage {pid!r} (in {', '.join(qids)}) is not in the corpus", fatal=strict)
        )


def _check_appended(
    report: VerifyReport, qs: QuestionSet, record: dict[str, Any] | None, intact: dict[str, bool]
) -> None:
    """The append-only rule over cases.jsonl, changelog.jsonl and freezes.jsonl: against git
    when the set is in a repository with commits of its files (curator.githistory), else
    against the local checkpoint (curator.checkpoint)."""
    assert report.scan is not None
    files = report.scan.files
    history = file_history(qs.root, [*files, JUDGMENTS])
    if history is not None and history.head:
        report.history = f"checked against {history.commits} commit(s)"
        for file in [*files.values(), JsonLines.read(qs.root / JUDGMENTS)]:
            report.problems.extend(check_appended(history, file.path.name, file.path, file.lines))
    elif record:
        report.history = "checked against the local checkpoint"
        changed = [name for name, ok in intact.items() if not ok]
        problems, notes = checkpoint.check_history(qs, record, {n: files[n] for n in changed}, report.scan.hashes)
        report.problems.extend(problems)
        report.notes.extend(notes)
    else:
        report.notes.append("no earlier checkpoint: this verify records the first one")
    report.notes.append(f"append-only: {report.history}")


def save_checkpoint(qs: QuestionSet, scan: SetScan) -> dict[str, Any] | None:
    """Remember the files as a passing verify read them (`report.scan`), so a later verify
    can tell whether any earlier line was edited, removed or reordered, and need not check
    the unchanged lines again."""
    hashes = {name: scan.hashes(name) for name in scan.files}
    return checkpoint.save(qs, checkpoint.Verified(scan.files, hashes, scan.revs, scan.retired))


_KEY = re.compile(rb'^\{"query_id":"([a-z0-9][a-z0-9-]*)","rev":([1-9][0-9]*),')
_CHANGE_KEY = re.compile(rb'^\{"at":"[^"]*","query_id":"([a-z0-9][a-z0-9-]*)","rev":([1-9][0-9]*),')


def _trusted_keys(record: dict[str, Any] | None, file: JsonLines, intact: bool, pattern: re.Pattern[bytes]) -> list[Key]:
    """The keys of the leading lines of the file a passing verify by this curator version
    checked, unchanged since (`intact`), read off each line with `pattern`. Trust ends at
    the first line the pattern does not fit."""
    if not record or not intact or record.get("curator") != __version__:
        return []
    keys = []
    for line in file.lines[: int(record["files"][file.path.name]["lines"])]:
        match = pattern.match(line)
        if match is None:
            break
        keys.append((match.group(1).decode(), int(match.group(2))))
    return keys


def require_sound(ws: Workspace, names: list[str] | None = None) -> None:
    """Refuse to build on a set that fails verify: raise CuratorError naming the first
    problem (file:line) of the first failing set among `names` (every set if None). Through
    the checkpoint only lines after the last verified one are parsed in full
    (`checkpoint.advance`); a full verify runs when that cannot prove the set sound."""
    from curator.errors import CuratorError

    for name in names if names is not None else ws.set_names():
        qs = ws.question_set(name)
        if not qs.exists() or sound_since_checkpoint(ws, qs):
            continue
        report = verify(qs)
        problem = report.first_problem
        if problem is not None:
            raise CuratorError(
                f"set {name!r} fails verify: {problem}",
                "Run `curator verify` for every problem, fix them, or pass --no-verify to go ahead anyway.",
            )
        if report.scan is not None:
            save_checkpoint(qs, report.scan)


def sound_since_checkpoint(ws: Workspace, qs: QuestionSet) -> bool:
    """True when the checkpoint proves the set passes verify: its verified prefix is
    intact and the lines appended since pass in full (`checkpoint.advance`, which moves the
    checkpoint past them), and judgments.jsonl is sound. False means: run the full verify."""
    return checkpoint.advance(qs) and _judgments_sound(ws, qs)


def read_checked(ws: Workspace, qs: QuestionSet) -> tuple[ReadResult, VerifyReport | None]:
    """The set as `qs.read()` gives it, proven sound first: by the gate's checkpoint (a
    50k-case set in a fraction of a second; no report then), else by the full verify, whose
    report is given, and which records the checkpoint of a set that passes, as the gate
    does. A set proven sound has no bad line, so only each case's latest line is parsed
    (`read_latest`, a third of `read()`'s time; its `history` is left empty); a set that
    fails is read in full, for its problems."""
    if qs.exists() and sound_since_checkpoint(ws, qs):
        return qs.read_latest(), None
    report = verify(qs)
    if report.first_problem is None and report.scan is not None:
        save_checkpoint(qs, report.scan)
        return qs.read_latest(), report
    return qs.read(), report


def _judgments_sound(ws: Workspace, qs: QuestionSet) -> bool:
    """The gate's check of judgments.jsonl (the checkpoint covers the set's own files; git
    history of it is `checkpoint.advance`'s): every line valid and, outside git, every line
    this workspace wrote still there."""
    from curator.judgments import check_recorded

    problems: list[Problem] = []
    check_judgments(problems, qs.root)
    record = checkpoint.load(qs)
    if record and not (record.get("seal") or {}).get("head"):
        problems.extend(check_recorded(ws, qs))
    return not any(p.fatal for p in problems)


def repair(qs: QuestionSet) -> bool:
    """Complete a write a crash interrupted (the `.pending.json` journal); True if there was one.
    The journal's lines are appended as they were written, so they credit the reviewer who
    made the decision."""
    pending = qs.root / ".pending.json"
    if not pending.exists():
        return False
    with qs.locked():
        pass
    return True
