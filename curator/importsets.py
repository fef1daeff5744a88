"""`curator sets import`: bring in a set a team already has (BEIR, TREC qrels, ranx JSON,
curator JSONL) as new cases, each appended with its change-log entry.

Graded qrels become roles by one rule (docs/export.md): grade 2 or more is a primary and 1
a secondary, except in a query whose highest grade is 1, where the grade-1 documents are
its primaries (a binary qrels file has only 1s); grade 0 (judged not relevant) is dropped.
The grades are kept as they were, so export -> import -> export gives the same qrels.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.errors import CuratorError
from curator.export import UsageError
from curator.models import Case, Relevant

if TYPE_CHECKING:
    from curator.workspace import Workspace

IMPORT_FORMATS = ("beir", "trec", "ranx", "jsonl")
Bad = list[tuple[str | None, str]]  # (the query id if the line names one, "file:line: what was expected")


@dataclass
class Imported:
    """One query as the source has it."""

    query_id: str
    query: str
    grades: dict[str, int]  # document id -> grade, in the source's order
    where: str  # file:line, for messages
    metadata: dict[str, Any] = field(default_factory=dict)
    expect_empty: bool = False
    case: Case | None = None  # a curator JSONL export: the whole case, kept as it is


@dataclass
class ImportResult:
    set_name: str
    format: str
    imported: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "where: query: why"

    def to_dict(self) -> dict[str, Any]:
        return {"set": self.set_name, "format": self.format, "imported": len(self.imported),
                "query_ids": self.imported, "skipped": self.skipped}


def import_set(ws: Workspace, path: Path, fmt: str, *, set_name: str | None = None, queries: Path | None = None,
               slice_name: str | None = None, slice_from: str | None = None, negatives: bool = False,
               allow_unknown_ids: bool = False, reviewer: str = "") -> ImportResult:
    """Append the queries of `path` to a set as cases with `source.kind = "import"`. A
    query whose id the set already uses is skipped (so a re-run adds nothing), and so is
    one naming a passage the corpus lacks unless `allow_unknown_ids`."""
    if fmt not in IMPORT_FORMATS:
        raise UsageError(f"format {fmt!r}: expected one of {', '.join(IMPORT_FORMATS)}")
    if slice_name and slice_from:
        raise UsageError("give --slice or --slice-from, not both")
    if slice_name and slice_name not in ws.config.slices:
        raise UsageError(f"--slice {slice_name!r} is not a slice of this workspace: {', '.join(ws.config.slices)}")
    bad: Bad = []
    items = read_source(path, fmt, queries, negatives, bad)
    qs = ws.question_set(set_name)
    result = ImportResult(qs.name, fmt)
    # a query with a bad line is left out whole (half its judgments would be a wrong case);
    # the other queries of the file still come in
    spoiled = {qid for qid, _problem in bad if qid is not None}
    result.skipped.extend(problem + (" (query left out)" if qid is not None else "") for qid, problem in bad)
    items = [item for item in items if item.query_id not in spoiled]
    used = {c.query_id for c in qs.read().cases.values()}
    wanted = {doc for item in items for doc in item.grades}
    known = ws.existing_passage_ids(wanted) if wanted else set()
    for item in items:
        why = _refusal(ws, item, used, known, allow_unknown_ids, slice_name, slice_from)
        if why:
            result.skipped.append(f"{item.where}: {item.query_id}: {why}")
            continue
        case = qs.add(_case(item, fmt, path, slice_name or _slice_of(item, slice_from)), reviewer=reviewer)
        used.add(case.query_id)
        result.imported.append(case.query_id)
    return result


def _refusal(ws: Workspace, item: Imported, used: set[str], known: set[str], allow_unknown_ids: bool,
             slice_name: str | None, slice_from: str | None) -> str | None:
    if item.query_id in used:
        return "the set already has this query id (imported before?)"
    if not item.query.strip():
        return "no query text (give the queries file with --queries)"
    unknown = [doc for doc in item.grades if doc not in known]
    if unknown and not allow_unknown_ids:
        return (f"{len(unknown)} id(s) not in the corpus, e.g. {unknown[0]!r} "
                "(add the corpus first, or --allow-unknown-ids)")
    chosen = slice_name or _slice_of(item, slice_from)
    if not chosen:
        return "no slice (give --slice NAME, or --slice-from FIELD naming a field the query carries)"
    if chosen not in ws.config.slices:
        return f"slice {chosen!r} is not one of this workspace's: {', '.join(ws.config.slices)}"
    return None


def _slice_of(item: Imported, slice_from: str | None) -> str | None:
    value = item.metadata.get(slice_from or "slice")
    return str(value) if value else None


def roles(grades: dict[str, int]) -> list[Relevant]:
    """The import rule: grade >= 2 primary, 1 secondary (primary where 1 is the top
    grade), 0 dropped; grades kept."""
    top = max(grades.values(), default=0)
    return [Relevant(id=doc, role="primary" if grade >= 2 or top == 1 else "secondary", grade=grade)
            for doc, grade in grades.items() if grade > 0]


def _case(item: Imported, fmt: str, path: Path, slice_name: str | None) -> Case:
    source = {"kind": "import", "format": fmt, "path": str(path), "original_id": item.query_id}
    if item.case is not None:
        # A curator export says everything: roles, revisions, require_all, max_rank,
        # freshness and explanation come in as they were; only the slice may be overridden.
        kept = item.case.model_dump(exclude={"rev", "at", "status"})
        kept.update(slice=slice_name, source={**source, "original_source": item.case.source.model_dump(
            exclude_none=True)})
        return Case.model_validate(kept)
    relevant = roles(item.grades)
    negative = item.expect_empty or not relevant
    data: dict[str, Any] = {
        "query_id": item.query_id, "query": item.query, "slice": slice_name, "relevant": relevant,
        "expect_empty": negative, "source": source,
    }
    if "tags" in item.metadata and isinstance(item.metadata["tags"], list):
        data["tags"] = [str(t) for t in item.metadata["tags"]]
    return Case.model_validate(data)


# ---- readers -------------------------------------------------------------------------------


def read_source(path: Path, fmt: str, queries: Path | None, negatives: bool, bad: Bad) -> list[Imported]:
    """The queries of a BEIR folder, a TREC folder or qrels file, a ranx qrels JSON or a
    curator JSONL export, with their graded documents. Queries without a positive
    document are kept only with `negatives` (or when the source marks them negative).
    A malformed line goes to `bad` and the reading goes on; a missing or unreadable file
    stops it."""
    if not path.exists():
        raise CuratorError(f"{path}: no such file or folder")
    if fmt == "jsonl":
        return _read_jsonl(path, bad)
    if fmt == "beir":
        folder = path if path.is_dir() else path.parent
        texts, meta = _read_query_texts(queries or folder / "queries.jsonl", bad)
        qrels_path = folder / "qrels" / "test.tsv" if path.is_dir() else path
        qrels = _read_tsv_qrels(qrels_path, bad)
    elif fmt == "trec":
        qrels_path = path / "qrels.txt" if path.is_dir() else path
        texts, meta = _read_query_texts(queries or qrels_path.parent / "topics.tsv", bad)
        qrels = _read_trec_qrels(qrels_path, bad)
    else:  # ranx
        if queries is None:
            raise UsageError("a ranx qrels file holds no query text: give it with --queries FILE (TSV or JSONL)")
        texts, meta = _read_query_texts(queries, bad)
        qrels = _read_ranx(path, bad)
    marked = _marked_negatives(path if path.is_dir() else path.parent, bad)
    items = []
    for qid, (grades, where) in qrels.items():
        if any(g > 0 for g in grades.values()) or negatives:
            items.append(Imported(qid, texts.get(qid, ""), grades, where, meta.get(qid, {})))
    for qid in texts:
        if qid not in qrels and (negatives or qid in marked):
            where, record = marked.get(qid, (str(queries or path), {}))
            items.append(Imported(qid, texts[qid], {}, where, meta.get(qid) or record, expect_empty=True))
    return items


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic: the first field and its message, not the whole report
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first.get('loc', ())) or 'line'}: {first.get('msg', '')}"
    return str(exc).splitlines()[0]


def _lines(path: Path) -> list[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CuratorError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise CuratorError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _read_query_texts(path: Path, bad: Bad) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Query texts (and BEIR metadata) from a JSONL (`_id`, `text`) or TSV (id, text) file."""
    texts: dict[str, str] = {}
    meta: dict[str, dict[str, Any]] = {}
    for number, line in _lines(path):
        if line.lstrip().startswith("{"):
            try:
                record = json.loads(line)
                qid, text = str(record["_id"]), str(record["text"])
            except (json.JSONDecodeError, KeyError, TypeError):
                bad.append((None, f"{path}:{number}: expected a JSON object with _id and text"))
                continue
            meta[qid] = record.get("metadata") or {}
        else:
            qid, sep, text = line.partition("\t")
            if not sep:
                bad.append((None, f"{path}:{number}: expected `query-id<TAB>text`"))
                continue
        texts[qid] = text
    return texts, meta


def _read_tsv_qrels(path: Path, bad: Bad) -> dict[str, tuple[dict[str, int], str]]:
    qrels: dict[str, tuple[dict[str, int], str]] = {}
    for number, line in _lines(path):
        parts = line.split("\t")
        if number == 1 and parts[:2] == ["query-id", "corpus-id"]:
            continue
        if len(parts) != 3:
            bad.append((parts[0] if len(parts) > 1 else None,
                        f"{path}:{number}: expected `query-id<TAB>corpus-id<TAB>score`"))
            continue
        _add(qrels, parts[0], parts[1], parts[2], f"{path}:{number}", bad)
    return qrels


def _read_trec_qrels(path: Path, bad: Bad) -> dict[str, tuple[dict[str, int], str]]:
    qrels: dict[str, tuple[dict[str, int], str]] = {}
    for number, line in _lines(path):
        parts = line.split()
        if len(parts) != 4:
            bad.append((parts[0] if len(parts) > 1 else None, f"{path}:{number}: expected `qid 0 docno relevance`"))
            continue
        _add(qrels, parts[0], parts[2], parts[3], f"{path}:{number}", bad)
    return qrels


def _read_ranx(path: Path, bad: Bad) -> dict[str, tuple[dict[str, int], str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CuratorError(f"{path}: not a ranx qrels JSON object ({exc})") from None
    if not isinstance(data, dict):
        raise CuratorError(f"{path}: expected {{query id: {{document id: grade}}}}")
    qrels: dict[str, tuple[dict[str, int], str]] = {}
    for qid, docs in data.items():
        if not isinstance(docs, dict):
            bad.append((str(qid), f"{path}: query {qid!r}: expected {{document id: grade}}"))
            continue
        for doc, grade in docs.items():
            _add(qrels, str(qid), str(doc), str(grade), f"{path} (query {qid})", bad)
    return qrels


def _add(qrels: dict[str, tuple[dict[str, int], str]], qid: str, doc: str, grade: str, where: str,
         bad: Bad) -> None:
    try:
        value = int(grade)
    except ValueError:
        bad.append((qid, f"{where}: relevance {grade!r} is not a whole number"))
        return
    if not 0 <= value <= 3:
        bad.append((qid, f"{where}: relevance {value} is outside 0-3 (curator's grades)"))
        return
    qrels.setdefault(qid, ({}, where))[0][doc] = value


def _marked_negatives(folder: Path, bad: Bad) -> dict[str, tuple[str, dict[str, Any]]]:
    """The queries an export listed in `negatives.jsonl` (no relevant passage): id ->
    (file:line, the record, which carries the slice)."""
    path = folder / "negatives.jsonl"
    if not path.exists():
        return {}
    marked = {}
    for number, line in _lines(path):
        try:
            record = json.loads(line)
            marked[str(record["query_id"])] = (f"{path}:{number}", record)
        except (json.JSONDecodeError, KeyError, TypeError):
            bad.append((None, f"{path}:{number}: expected a JSON object with query_id"))
    return marked


def _read_jsonl(path: Path, bad: Bad) -> list[Imported]:
    """A curator JSONL export (one case per line; retired ones are not brought in)."""
    items = []
    for number, line in _lines(path):
        try:
            case = Case.model_validate_json(line)
        except ValueError as exc:
            bad.append((None, f"{path}:{number}: not a curator case ({_first_error(exc)})"))
            continue
        if case.status != "active":
            continue
        grades = {r.id: r.grade if r.grade is not None else 0 for r in case.relevant}
        items.append(Imported(case.query_id, case.query, grades, f"{path}:{number}",
                              {"slice": case.slice, "tags": case.tags}, expect_empty=case.expect_empty, case=case))
    return items
