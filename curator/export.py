"""Export a question set for other evaluators: jsonl, BEIR, TREC, ranx JSON, an ir_measures qrels file.

Every format writes each file to a temporary name and renames it into place, so a reader
never sees half an export. Negative cases (no relevant passages) are carried where the
format can hold them (`jsonl`) and otherwise listed in `negatives.jsonl` beside the export
with a warning: never dropped silently. docs/export.md describes each layout; the `read_*`
functions read them back (for round-trip tests and for scripts).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator._process import paused_gc
from curator.appendonly import line_hash, whole_lines, write_durably
from curator.errors import EXIT_USAGE, CuratorError
from curator.freeze import find_freeze, git
from curator.models import Case, Passage
from curator.questionset import QuestionSet, ReadResult, read_cases

if TYPE_CHECKING:
    from curator.workspace import Workspace

FORMATS = ("jsonl", "beir", "trec", "ranx", "ir_measures")
STATUSES = ("active", "retired", "all")
NEGATIVES = "negatives.jsonl"

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TSV_BREAK = re.compile(r'[\t\r\n]|^"')  # what breaks a row of BEIR's TSV (read with csv.reader)
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2})?(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$")


class UsageError(CuratorError):
    """A bad option value (exit code 2)."""

    exit_code = EXIT_USAGE


@dataclass
class Selection:
    """Which cases an export takes; `as_of` is described in docs/export.md."""

    slices: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    status: str = "active"
    as_of: str | None = None


@dataclass
class ExportResult:
    format: str
    out: Path
    files: list[Path] = field(default_factory=list)
    cases: int = 0
    qrels: int = 0
    negatives: list[str] = field(default_factory=list)  # query_ids in the side file
    skipped: list[str] = field(default_factory=list)  # what could not be written, and why
    warnings: list[str] = field(default_factory=list)
    as_of: str | None = None  # what --as-of resolved to

    @property
    def partial(self) -> bool:
        return bool(self.skipped)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "out": str(self.out), "files": [str(p) for p in self.files]}


# ---- choosing the cases ---------------------------------------------------------------------


def select_cases(ws: Workspace, set_name: str | None, selection: Selection) -> tuple[list[Case], str | None]:
    """The latest rev of each case (as of `selection.as_of`) that passes the filters,
    in the order the cases first appeared; and a description of the as-of point."""
    if selection.status not in STATUSES:
        raise UsageError(f"status {selection.status!r}: expected one of {', '.join(STATUSES)}")
    qs = ws.existing_set(set_name)
    cases, described = cases_as_of(ws, qs, selection.as_of)
    chosen = []
    for case in cases:
        if selection.status != "all" and case.status != selection.status:
            continue
        if selection.slices and case.slice not in selection.slices:
            continue
        if selection.tags and not set(selection.tags) & set(case.tags):
            continue
        chosen.append(case)
    return chosen, described


def cases_as_of(ws: Workspace, qs: QuestionSet, ref: str | None) -> tuple[list[Case], str | None]:
    """Resolve REV_OR_DATE, in this order: a line count of cases.jsonl (`120`), a UTC date
    or time (`2026-11-29`, end of that day; `2026-11-29T10:00Z`), a freeze (`regression`
    for the newest, or `regression-20261129[-N]`), or a git commit of the workspace."""
    if ref is None:
        return latest_cases(qs), None
    ref = ref.strip()
    if ref.isdigit():
        return _latest(qs.read(until_line=int(ref))), f"first {int(ref)} lines of cases.jsonl"
    if _DATE.match(ref) or _DATETIME.match(ref):
        until = _normalise_time(ref)
        return _latest(qs.read(until_time=until)), f"cases written at or before {until}"
    found = find_freeze(qs, ref)
    if found is not None:
        path, manifest = found
        prefix = manifest["cases_prefix"]
        count, digest = qs.prefix_digest(prefix["lines"])
        label = f"freeze {path.stem} ({prefix['lines']} lines of cases.jsonl)"
        if count == prefix["lines"] and digest == prefix["sha256"]:
            return _latest(qs.read(until_line=count)), label
        # After a union merge the prefix is a subsequence: take exactly its lines.
        wanted = list(prefix["line_hashes"])
        picked: list[str] = []
        for raw in whole_lines(qs.cases_path):
            if len(picked) < len(wanted) and line_hash(raw) == wanted[len(picked)]:
                picked.append(raw)
        if len(picked) != len(wanted):
            raise CuratorError(
                f"the lines freeze {path.stem} was taken from are no longer in {qs.cases_path}",
                "Run `curator verify`.",
            )
        return _latest(read_cases(str(qs.cases_path), picked)), label
    commit = _git_commit(ws.root, ref)
    if commit is None:
        raise UsageError(
            f"--as-of {ref!r}: expected a line count, a date (YYYY-MM-DD or an ISO time), "
            f"a freeze of set {qs.name!r}, or a git commit of the workspace"
        )
    blob = _git_blob(ws.root, commit, qs.cases_path)
    lines = blob.split("\n")[:-1]  # a torn last line is never data
    return _latest(read_cases(f"{commit[:12]}:{qs.cases_path.name}", lines)), f"git commit {commit[:12]}"


@paused_gc()
def latest_cases(qs: QuestionSet) -> list[Case]:
    """The latest rev of every case, in first-seen order, validating only each case's last
    line (`QuestionSet.read_latest`: an export needs nothing older). A line that is not a
    case is an error naming file and line; a torn last line is never data."""
    return _latest(qs.read_latest())


def _latest(result: ReadResult) -> list[Case]:
    """The cases read, or an error naming the first line that is no case."""
    bad = [p for p in result.problems if p.fatal]
    if bad:
        raise CuratorError(
            f"{bad[0]} ({len(bad)} invalid line(s) in all)",
            "Run `curator verify` and fix the file; exports never guess at a broken record.",
        )
    return list(result.cases.values())


def _normalise_time(ref: str) -> str:
    from datetime import UTC, datetime

    if _DATE.match(ref):
        return f"{ref}T23:59:59Z"
    text = ref.replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--as-of {ref!r}: not a valid date or time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git_commit(root: Path, ref: str) -> str | None:
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip() or None
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None


def _git_blob(root: Path, commit: str, path: Path) -> str:
    relative = os.path.relpath(path, root)
    try:
        return git(root, "show", f"{commit}:./{relative}")
    except subprocess.CalledProcessError:
        raise CuratorError(f"git commit {commit[:12]} has no {relative}") from None


# ---- writing ------------------------------------------------------------------------------------


@paused_gc()
def export(
    ws: Workspace,
    set_name: str | None,
    fmt: str,
    out: str | os.PathLike[str],
    *,
    selection: Selection | None = None,
    with_corpus: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ExportResult:
    """Write the selected cases of a set to `out` in `fmt` (see FORMATS). `jsonl`, `ranx`
    and `ir_measures` write one file; `beir` and `trec` write a folder."""
    if fmt not in FORMATS:
        raise UsageError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if with_corpus and fmt != "beir":
        raise UsageError("--with-corpus only applies to --format beir")
    cases, described = select_cases(ws, set_name, selection or Selection())
    result = ExportResult(fmt, Path(out), as_of=described)
    if fmt == "jsonl":
        _export_jsonl(cases, result)
    elif fmt == "beir":
        _export_beir(ws, cases, result, with_corpus, progress)
    elif fmt == "trec":
        _export_trec(cases, result)
    elif fmt == "ir_measures":
        _export_qrels_file(cases, result)
    else:
        _export_qrels_json(cases, result)
    return result


def _export_jsonl(cases: list[Case], result: ExportResult) -> None:
    _check_file_target(result.out)
    write_durably(result.out, "".join(case.line() + "\n" for case in cases))
    result.files.append(result.out)
    result.cases = len(cases)
    result.qrels = sum(len(c.relevant) for c in cases)


def _export_beir(
    ws: Workspace, cases: list[Case], result: ExportResult, with_corpus: bool,
    progress: Callable[[int], None] | None,
) -> None:
    folder = _dir_target(result.out)
    queries, rows = [], ["query-id\tcorpus-id\tscore\n"]
    labelled: set[str] = set()
    for case in cases:
        bad = [r.id for r in case.relevant if _TSV_BREAK.search(r.id)]
        if bad:
            result.skipped.append(f"{case.query_id}: passage id {bad[0]!r} holds a tab or newline, "
                                  "or starts with a quote (BEIR's TSV cannot hold it)")
            continue
        metadata = {"slice": case.slice, "tags": case.tags, "status": case.status, "rev": case.rev}
        if not case.relevant:
            metadata["expect_empty"] = True
        queries.append(json.dumps({"_id": case.query_id, "text": case.query, "metadata": metadata},
                                  ensure_ascii=False) + "\n")
        for rel in case.relevant:
            rows.append(f"{case.query_id}\t{rel.id}\t{rel.grade}\n")
            labelled.add(rel.id)
        result.cases += 1
    result.qrels = len(rows) - 1
    write_durably(folder / "queries.jsonl", "".join(queries))
    (folder / "qrels").mkdir(exist_ok=True)
    write_durably(folder / "qrels" / "test.tsv", "".join(rows))
    result.files += [folder / "queries.jsonl", folder / "qrels" / "test.tsv"]
    if with_corpus:
        missing = _write_corpus(ws, folder / "corpus.jsonl", labelled, progress)
        result.files.append(folder / "corpus.jsonl")
        if missing:
            result.warnings.append(
                f"{len(missing)} labelled passage id(s) are not in the corpus: {', '.join(sorted(missing)[:5])}"
            )
    else:
        result.warnings.append(
            "no corpus.jsonl written: BEIR's GenericDataLoader needs one (add --with-corpus)"
        )
    _side_file(folder, cases, result, "BEIR qrels cannot hold a query with no relevant passage "
                                      "(GenericDataLoader drops it)")


def _write_corpus(
    ws: Workspace, path: Path, labelled: set[str], progress: Callable[[int], None] | None
) -> set[str]:
    """Every current passage, plus the newest stored revision of a labelled passage that
    is no longer current. Returns labelled ids the corpus does not have at all."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    seen: set[str] = set()
    with open(tmp, "w", encoding="utf-8") as fh:
        for count, passage in enumerate(ws.passages(current=True), start=1):
            seen.add(passage.id)
            fh.write(_corpus_line(passage))
            if progress and count % 1000 == 0:
                progress(1000)
        for pid in sorted(labelled - seen):
            stored = ws.passage(pid)
            if stored is not None:
                seen.add(pid)
                fh.write(_corpus_line(stored))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return labelled - seen


def _corpus_line(passage: Passage) -> str:
    title = passage.title or passage.heading
    return json.dumps({"_id": passage.id, "title": title, "text": passage.text}, ensure_ascii=False) + "\n"


def _export_trec(cases: list[Case], result: ExportResult) -> None:
    folder = _dir_target(result.out)
    qrels, topics = [], []
    for case in cases:
        bad = [r.id for r in case.relevant if not r.id or any(ch.isspace() for ch in r.id)]
        if bad:
            result.skipped.append(f"{case.query_id}: passage id {bad[0]!r} holds whitespace (TREC splits on it)")
            continue
        topics.append(f"{case.query_id}\t{' '.join(case.query.split())}\n")
        qrels += [f"{case.query_id} 0 {rel.id} {rel.grade}\n" for rel in case.relevant]
        result.cases += 1
    result.qrels = len(qrels)
    write_durably(folder / "qrels.txt", "".join(qrels))
    write_durably(folder / "topics.tsv", "".join(topics))
    result.files += [folder / "qrels.txt", folder / "topics.tsv"]
    _side_file(folder, cases, result, "TREC qrels cannot hold a topic with no relevant document")


def _export_qrels_json(cases: list[Case], result: ExportResult) -> None:
    _check_file_target(result.out)
    qrels = {c.query_id: {r.id: r.grade for r in c.relevant} for c in cases if c.relevant}
    result.cases = len(qrels)
    result.qrels = sum(len(v) for v in qrels.values())
    write_durably(result.out, json.dumps(qrels, ensure_ascii=False, indent=1) + "\n")
    result.files.append(result.out)
    side = result.out.with_name(result.out.stem + "." + NEGATIVES)
    _side_file(result.out.parent, cases, result, f"{result.format} qrels cannot hold a query with "
                                                 "no relevant document", path=side)


def _export_qrels_file(cases: list[Case], result: ExportResult) -> None:
    """One TREC qrels file (`qid 0 docid grade`), the path `ir_measures.read_trec_qrels`
    and every `ir_measures` entry point that takes a file read."""
    _check_file_target(result.out)
    lines = []
    for case in cases:
        bad = [r.id for r in case.relevant if not r.id or any(ch.isspace() for ch in r.id)]
        if bad:
            result.skipped.append(f"{case.query_id}: passage id {bad[0]!r} holds whitespace (TREC splits on it)")
            continue
        lines += [f"{case.query_id} 0 {rel.id} {rel.grade}\n" for rel in case.relevant]
        result.cases += 1 if case.relevant else 0
    result.qrels = len(lines)
    write_durably(result.out, "".join(lines))
    result.files.append(result.out)
    side = result.out.with_name(result.out.stem + "." + NEGATIVES)
    _side_file(result.out.parent, cases, result, "TREC qrels cannot hold a query with no relevant document",
               path=side)


def _side_file(folder: Path, cases: list[Case], result: ExportResult, why: str, path: Path | None = None) -> None:
    """List negative cases in a side file (or remove a stale one from an earlier export)."""
    path = path or folder / NEGATIVES
    negatives = [c for c in cases if not c.relevant]
    if not negatives:
        if path.exists():
            path.unlink()
        return
    lines = [
        json.dumps({"query_id": c.query_id, "query": c.query, "slice": c.slice,
                    "expect_empty": c.expect_empty, "status": c.status}, ensure_ascii=False) + "\n"
        for c in negatives
    ]
    write_durably(path, "".join(lines))
    result.files.append(path)
    result.negatives = [c.query_id for c in negatives]
    result.warnings.append(f"{len(negatives)} negative case(s) listed in {path.name}: {why}")


def _check_file_target(path: Path) -> None:
    if path.is_dir():
        raise CuratorError(f"--out {path} is a folder; this format writes one file")
    if not path.parent.is_dir():
        raise CuratorError(f"--out {path}: folder {path.parent} does not exist")


def _dir_target(path: Path) -> Path:
    if path.exists() and not path.is_dir():
        raise CuratorError(f"--out {path} is a file; this format writes a folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---- reading exports back --------------------------------------------------------------------


def read_jsonl(path: str | os.PathLike[str]) -> list[Case]:
    return _latest(read_cases(str(path), whole_lines(Path(path))))


def read_beir(folder: str | os.PathLike[str]) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, int]]]:
    """(queries {_id: record}, qrels {query-id: {corpus-id: score}}) of a BEIR folder."""
    folder = Path(folder)
    queries = {}
    for line in whole_lines(folder / "queries.jsonl"):
        record = json.loads(line)
        queries[record["_id"]] = record
    qrels: dict[str, dict[str, int]] = {}
    rows = list(whole_lines(folder / "qrels" / "test.tsv"))
    if not rows or rows[0].split("\t") != ["query-id", "corpus-id", "score"]:
        raise CuratorError(f"{folder / 'qrels' / 'test.tsv'}:1: expected the header query-id corpus-id score")
    for row in rows[1:]:
        qid, pid, score = row.split("\t")
        qrels.setdefault(qid, {})[pid] = int(score)
    return queries, qrels


def read_trec(folder: str | os.PathLike[str]) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """(topics {qid: query}, qrels {qid: {docno: rel}}) of a TREC export folder."""
    folder = Path(folder)
    topics = dict(line.split("\t", 1) for line in whole_lines(folder / "topics.tsv"))
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(whole_lines(folder / "qrels.txt"), start=1):
        parts = line.split()
        if len(parts) != 4:
            raise CuratorError(f"{folder / 'qrels.txt'}:{number}: expected `qid 0 docno rel`")
        qrels.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return topics, qrels


def read_qrels_json(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_negatives(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    path = Path(path)
    return [json.loads(line) for line in whole_lines(path)] if path.exists() else []
