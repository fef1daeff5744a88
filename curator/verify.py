"""`curator verify`: every check over a question set's files, and its checkpoints.

`verify(qs)` is the one entry point for a set (`verify_workspace` runs it over a
workspace's sets and records the checkpoints). Each file is read once, into a `SetScan`;
each check is a named function that reads the scan and adds `Problem`s to the report:

- `_check_cases`: every cases.jsonl line is a valid case, each case's revs run 1, 2, 3...;
- `_check_changelog`: every changelog.jsonl line is a valid entry;
- `_check_pairing`: each case line has its change-log entry and the other way round;
- `_check_labels`: the labelled passage ids of active cases are in the corpus;
- `_check_history`: no line the last checkpoint saw was edited, removed or reordered;
- `check_freezes`: the frozen subsets still match their manifests (curator.freeze).

A checkpoint remembers the files as a passing verify read them. Lines a passing verify of
this curator version checked, byte for byte unchanged since, get no second schema check:
their key (query_id, rev) is read off the line (curator writes it first).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from curator import __version__
from curator._process import paused_gc
from curator.appendonly import JsonLines, first_change, is_subsequence, write_durably
from curator.freeze import FREEZES, check_freezes
from curator.githistory import check_appended, file_history
from curator.judgments import JUDGMENTS
from curator.models import Case, ChangeEntry, utcnow, validation_problems
from curator.problems import Problem
from curator.questionset import QuestionSet
from curator.setchecks import (
    Duplicate,
    check_actions,
    check_bytes,
    check_candidates,
    check_conflicts,
    check_judgments,
    check_pending,
    check_slices,
)

if TYPE_CHECKING:
    from curator.workspace import Workspace

Key = tuple[str, int]  # (query_id, rev) of a line; None stands for an invalid line
KnownIds = Callable[[set[str]], set[str]]  # of the passage ids given, those in the corpus


@dataclass
class SetScan:
    """What one verify read of a set. Its checkpoint and the freeze checks use this instead of
    reading the files again, so they describe the files exactly as they were verified."""

    cases: JsonLines
    changelog: JsonLines
    line_hashes: list[str]  # of each whole cases.jsonl line
    query_ids: set[str]  # every query_id with a valid line in cases.jsonl


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
    latest_cases: dict[str, Case] = field(default_factory=dict, repr=False)  # checked here, by query_id
    latest_lines: dict[int, str] = field(default_factory=dict, repr=False)  # line number -> query_id

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
    from curator.corpus.labels import stale_label_problems
    from curator.judgments import check_recorded

    reports = []
    has_corpus = ws.corpus_stats().passages > 0  # a fresh clone has no workspace.db corpus yet
    for name in names:
        qs = ws.question_set(name)
        report = verify(qs, known_ids=ws.existing_passage_ids if has_corpus else None, strict=strict)
        if has_corpus:
            report.problems.extend(stale_label_problems(ws, qs))  # labels on ids only in history
        elif strict:
            report.problems.append(Problem(str(qs.cases_path), None, "--strict: the labels cannot be checked, this "
                                           "workspace has no corpus yet (curator corpus add)"))
        else:
            report.notes.append("labels not checked against the corpus: this workspace has none yet "
                                "(curator corpus add)")
        if "commit" not in report.history:  # judgments.jsonl without git (issue 24)
            report.problems.extend(check_recorded(ws, qs))
        if report.ok and report.scan is not None:
            save_checkpoint(qs, report.scan)
        reports.append(report)
    return reports


@paused_gc()
def verify(qs: QuestionSet, *, known_ids: KnownIds | None = None, strict: bool = False) -> VerifyReport:
    """Check a set's files: schema, rev order, change-log pairing, labelled passage ids (via
    `known_ids`; unknown ones are errors only with `strict`), that no earlier line changed
    since the last checkpoint, and its freezes."""
    report = VerifyReport(qs.name)
    if not qs.exists():
        report.problems.append(Problem(str(qs.cases_path), None, "no such question set (file missing)"))
        return report
    checkpoint = load_checkpoint(qs)
    cases, changelog = JsonLines.read(qs.cases_path), JsonLines.read(qs.changelog_path)
    check_pending(report.problems, qs.root / ".pending.json")
    check_bytes(report.problems, cases)
    check_bytes(report.problems, changelog)
    trusted = _trusted_keys(checkpoint, cases, "lines", "sha256", _KEY)
    hashes = _line_hashes(cases, checkpoint, len(trusted))
    case_keys, latest = _check_cases(report, cases, trusted)
    change_trusted = _trusted_keys(checkpoint, changelog, "changelog_lines", "changelog_sha256", _CHANGE_KEY)
    change_keys = _check_changelog(report, changelog, change_trusted)
    _check_pairing(report, str(qs.cases_path), str(qs.changelog_path), case_keys, change_keys)
    retired = {key: line_retired(cases.lines[i]) for i, key in enumerate(case_keys) if key and i >= len(trusted)}
    check_actions(report.problems, str(qs.changelog_path), changelog, len(change_trusted), retired)
    check_conflicts(report.problems, str(qs.cases_path), report.duplicates, changelog)
    lines_of = {query_id: number for number, query_id in report.latest_lines.items()}
    check_candidates(report.problems, str(qs.cases_path), report.latest_cases, lines_of)
    check_slices(report.problems, str(qs.cases_path), report.latest_cases, lines_of)
    _check_labels(report, str(qs.cases_path), latest, known_ids, strict)
    _check_appended(report, qs, checkpoint, cases, changelog, hashes)
    check_judgments(report.problems, qs.root)  # the second pass's judgments.jsonl (issue 24)
    report.scan = SetScan(cases, changelog, hashes, set(latest))
    infos, notes = check_freezes(qs, cases, line_hashes=hashes, query_ids=report.scan.query_ids)
    for info in infos:
        report.problems.extend(info.problems)
    report.notes.extend(notes)
    return report


# ---- the checks --------------------------------------------------------------------------------


Labels = tuple[str, list[str]]  # a case line's status and relevant passage ids


def _check_cases(
    report: VerifyReport, cases: JsonLines, trusted: list[Key]
) -> tuple[list[Key | None], dict[str, Labels]]:
    """Schema-check each cases.jsonl line after the trusted ones, and check that each case's
    revs run 1, 2, 3... Gives each line's key (None if invalid) and each case's latest labels."""
    path = str(cases.path)
    keys: list[Key | None] = []
    labels: dict[str, Labels] = {}  # query_id -> labels of its latest valid line checked here
    latest: dict[str, int] = {}  # query_id -> index of its latest valid line
    last_rev: dict[str, int] = {}
    seen_at: dict[Key, int] = {}  # (query_id, rev) -> its first line number
    validate = Case.__pydantic_validator__.validate_json  # Case.model_validate_json, minus a call
    for index, line in enumerate(cases.lines):
        if index < len(trusted):
            query_id, rev = trusted[index]
        else:
            try:
                case = validate(line)
            except ValidationError as exc:
                report.problems.append(Problem(path, index + 1, f"not a valid case: {validation_problems(exc, 'record')}"))
                keys.append(None)
                continue
            query_id, rev = case.query_id, case.rev
            labels[query_id] = (case.status, [rel.id for rel in case.relevant])
            report.latest_cases[query_id] = case
        keys.append((query_id, rev))
        latest[query_id] = index
        previous = last_rev.get(query_id, 0)
        first = seen_at.setdefault((query_id, rev), index + 1)
        if first != index + 1:  # a second line with this rev: a merge conflict, reported as one
            report.duplicates.append(Duplicate(query_id, rev, first, index + 1))
        elif rev != previous + 1:
            report.problems.append(Problem(path, index + 1, f"{query_id}: rev {rev} where {previous + 1} was expected"))
        if rev > previous:
            last_rev[query_id] = rev
    report.lines = cases.count
    if cases.torn:
        message = "torn last line (interrupted write); the next append repairs it"
        report.problems.append(Problem(path, cases.count + 1, message, fatal=False))
    # A case whose latest line is trusted still has it read, for its status and labels (any
    # line checked here comes after every trusted one).
    for query_id, index in latest.items():
        if query_id not in labels:
            try:
                case = validate(cases.lines[index])
            except ValidationError as exc:  # only if the schema changed without a version bump
                report.problems.append(Problem(path, index + 1, f"not a valid case: {validation_problems(exc, 'record')}"))
                continue
            labels[query_id] = (case.status, [rel.id for rel in case.relevant])
            report.latest_cases[query_id] = case
    report.latest_lines = {index + 1: query_id for query_id, index in latest.items()}
    return keys, {query_id: labels[query_id] for query_id in latest if query_id in labels}


def _check_changelog(report: VerifyReport, changelog: JsonLines, trusted: list[Key]) -> list[Key | None]:
    """Schema-check each change-log line after the trusted ones; gives each line's key."""
    path = str(changelog.path)
    keys: list[Key | None] = list(trusted)
    validate = ChangeEntry.__pydantic_validator__.validate_json
    for number, line in enumerate(changelog.lines[len(trusted):], start=len(trusted) + 1):
        try:
            entry = validate(line)
        except ValidationError as exc:
            report.problems.append(Problem(path, number, f"not a valid change entry: {validation_problems(exc, 'record')}"))
            keys.append(None)
            continue
        keys.append((entry.query_id, entry.rev))
    if changelog.torn:
        report.problems.append(Problem(path, changelog.count + 1, "torn last line ignored", fatal=False))
    return keys


def _check_pairing(
    report: VerifyReport, cases_path: str, changelog_path: str,
    case_keys: list[Key | None], change_keys: list[Key | None],
) -> None:
    """Each valid case line (query_id, rev) needs a valid change-log line and the other way
    round. Curator appends the two in the same order, so equal lists settle it without
    building sets; a union merge may interleave them differently, which is no problem."""
    if case_keys == change_keys:
        return
    cases = {key for key in case_keys if key is not None}
    changes = {key for key in change_keys if key is not None}
    for query_id, rev in sorted(cases - changes):
        report.problems.append(Problem(changelog_path, None, f"{query_id} rev {rev} has no change-log entry"))
    for query_id, rev in sorted(changes - cases):
        report.problems.append(Problem(cases_path, None, f"change-log entry for {query_id} rev {rev} has no case line"))


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


def line_retired(line: bytes) -> bool:
    return b'"status":"retired"' in line


def _check_appended(
    report: VerifyReport, qs: QuestionSet, checkpoint: dict[str, Any] | None,
    cases: JsonLines, changelog: JsonLines, hashes: list[str],
) -> None:
    """The append-only rule: against git when the set is in a repository with commits of
    its files (curator.githistory), else against the local checkpoint."""
    history = file_history(qs.root, [cases.path.name, changelog.path.name, FREEZES, JUDGMENTS])
    if history is not None and history.head:
        report.history = f"checked against {history.commits} commit(s)"
        for file in (cases, changelog, JsonLines.read(qs.root / FREEZES), JsonLines.read(qs.root / JUDGMENTS)):
            report.problems.extend(check_appended(history, file.path.name, file.path, file.lines))
        report.notes.append(f"append-only: {report.history}")
        return
    if checkpoint:
        report.history = "checked against the local checkpoint"
    _check_history(report, checkpoint, cases, hashes)
    report.notes.append(f"append-only: {report.history}")


def _check_history(
    report: VerifyReport, checkpoint: dict[str, Any] | None, cases: JsonLines, hashes: list[str]
) -> None:
    """The lines the last checkpoint saw are still there, unchanged and in order (a union
    merge may have inserted lines among them)."""
    if not checkpoint:
        report.notes.append("no earlier checkpoint: this verify records the first one")
        return
    n = checkpoint["lines"]
    if cases.digest(n) == (n, checkpoint["sha256"]):
        return
    old = checkpoint.get("line_hashes", [])
    if is_subsequence(old, hashes):
        report.notes.append(
            "lines were inserted after the shared prefix (a union merge); every checkpointed line is intact"
        )
        return
    index, verb = first_change(old, hashes)
    report.problems.append(
        Problem(
            str(cases.path), index,
            f"line {index} as of the checkpoint of {checkpoint['at']} was {verb}; cases.jsonl is append-only",
        )
    )


# ---- checkpoints ------------------------------------------------------------------------------


def load_checkpoint(qs: QuestionSet) -> dict[str, Any] | None:
    path = qs.checkpoint_path
    try:
        checkpoint: dict[str, Any] | None = json.loads(path.read_text(encoding="utf-8")) if path else None
    except (FileNotFoundError, ValueError):
        return None
    return checkpoint


def save_checkpoint(qs: QuestionSet, scan: SetScan) -> dict[str, Any] | None:
    """Remember the files as a passing verify read them (`report.scan`), so a later verify
    can tell whether any earlier line was edited, removed or reordered, and need not check
    the unchanged lines again."""
    path = qs.checkpoint_path
    if not path:
        return None
    count, digest = scan.cases.digest()
    changes, changes_digest = scan.changelog.digest()
    record = {
        "at": utcnow(), "curator": __version__, "lines": count, "sha256": digest, "line_hashes": scan.line_hashes,
        "changelog_lines": changes, "changelog_sha256": changes_digest, "seal": _seal(qs),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_durably(path, json.dumps(record))
    return record


_KEY = re.compile(rb'^\{"query_id":"([a-z0-9][a-z0-9-]*)","rev":([1-9][0-9]*),')
_CHANGE_KEY = re.compile(rb'^\{"at":"[^"]*","query_id":"([a-z0-9][a-z0-9-]*)","rev":([1-9][0-9]*),')


def _trusted_keys(
    checkpoint: dict[str, Any] | None, file: JsonLines, lines_key: str, sha_key: str, pattern: re.Pattern[bytes]
) -> list[Key]:
    """The keys of the leading lines of the file a passing verify by this curator version
    checked, unchanged since, read off each line with `pattern`. Trust ends at the first
    line the pattern does not fit."""
    if not checkpoint or checkpoint.get("curator") != __version__ or lines_key not in checkpoint:
        return []
    lines = checkpoint[lines_key]
    if file.digest(lines) != (lines, checkpoint[sha_key]):
        return []
    keys = []
    for line in file.lines[:lines]:
        match = pattern.match(line)
        if match is None:
            break
        keys.append((match.group(1).decode(), int(match.group(2))))
    return keys


def _line_hashes(cases: JsonLines, checkpoint: dict[str, Any] | None, trusted: int) -> list[str]:
    """The hash of each cases.jsonl line; the trusted lines' from the checkpoint."""
    hashes: list[str] = checkpoint.get("line_hashes", [])[:trusted] if checkpoint and trusted else []
    if len(hashes) != trusted:
        hashes = []
    sha1 = hashlib.sha1  # line_hash, inlined: 200k calls
    return hashes + [sha1(line).hexdigest()[:16] for line in cases.lines[len(hashes):]]


def require_sound(ws: Workspace, names: list[str] | None = None) -> None:
    """Refuse to build on a set that fails verify: raise CuratorError naming the first
    problem (file:line) of the first failing set among `names` (every set if None). Uses
    the checkpoint, so only lines after the last verified one are parsed in full."""
    from curator.errors import CuratorError

    for name in names if names is not None else ws.set_names():
        qs = ws.question_set(name)
        if not qs.exists():
            continue
        if _unchanged(qs):
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


def _seal(qs: QuestionSet) -> dict[str, Any]:
    """What else a passing verify depended on: the git HEAD, freezes.jsonl and frozen/."""
    from curator.freeze import FREEZES, FROZEN_DIR, git

    try:
        head = git(qs.root, "rev-parse", "--verify", "--quiet", "HEAD").strip()
    except (OSError, subprocess.CalledProcessError):
        head = ""
    frozen = qs.root / FROZEN_DIR
    listing = sorted(
        (p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in frozen.iterdir()
    ) if frozen.is_dir() else []
    freezes = qs.root / FREEZES
    return {
        "head": head, "frozen": [list(item) for item in listing],
        "freezes": hashlib.sha256(freezes.read_bytes()).hexdigest() if freezes.exists() else "",
        "pending": (qs.root / ".pending.json").exists(),
    }


def _unchanged(qs: QuestionSet) -> bool:
    """The gate's fast path: the set's files are byte for byte what the last passing verify
    (its checkpoint) saw, and so are HEAD and the freezes. Costs one read and hash of each file."""
    checkpoint = load_checkpoint(qs)
    if not checkpoint or checkpoint.get("curator") != __version__ or "seal" not in checkpoint:
        return False
    for path, lines_key, sha_key in ((qs.cases_path, "lines", "sha256"),
                                     (qs.changelog_path, "changelog_lines", "changelog_sha256")):
        data = path.read_bytes() if path.exists() else b""
        if hashlib.sha256(data).hexdigest() != checkpoint[sha_key] or data.count(b"\n") != checkpoint[lines_key]:
            return False
    return bool(_seal(qs) == checkpoint["seal"])
