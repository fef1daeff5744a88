"""Turn paths into document revisions and hand them to the workspace."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from curator.corpus import git
from curator.corpus.chunker import chunk_document, detect_format
from curator.corpus.sources import (
    SourceError,
    content_revision,
    decode_document,
    file_time,
    iso_utc,
    iter_jsonl,
    link_problem,
    read_document,
    sniff_jsonl,
    walk,
)
from curator.errors import InputError
from curator.models import CHUNKER_VERSION, DocRevision, ImportReport, PassageRecord

if TYPE_CHECKING:
    from curator.workspace import Workspace

Progress = Callable[[str], None]


def add_paths(
    ws: Workspace,
    paths: Iterable[str | Path],
    *,
    history: bool = False,
    base: Path | None = None,
    prefix: str = "",
    progress: Progress | None = None,
) -> ImportReport:
    """Import documents and corpus files. A directory's files get ids relative to it
    (`carriers/dhl.md#cutoff-times`); `prefix` is put before every id. JSONL files are
    sniffed: pre-chunked passages (`id`, `text`), BEIR (`_id`), or document revisions
    (`path`, `revision`, `committed_at`, `text`)."""
    report = ImportReport()
    if ws.meta("chunker_version") is None and ws.corpus_stats().passages_all == 0:
        ws.set_meta("chunker_version", CHUNKER_VERSION)  # a new corpus: cut by this chunker
    given = [Path(raw) for raw in paths]
    for path in given:  # before anything is imported: a typo stops the import, not half of it
        if not path.exists() and not path.is_symlink():
            raise InputError(str(path), "no such file or directory")
    for path in given:
        problem = link_problem(path, path.parent.resolve()) if path.is_symlink() else None
        if problem and not problem.startswith("symlink to"):  # named by the user: followed wherever it leads
            report.skip(str(path), problem)
            continue
        docs = _docs_for(ws, path, report, history=history, base=base, prefix=prefix, progress=progress)
        report.merge(ws.import_documents(docs))
    return report


def _docs_for(ws: Workspace, path: Path, report: ImportReport, *, history: bool, base: Path | None, prefix: str,
              progress: Progress | None) -> Iterator[DocRevision]:
    name = path.name.lower()
    if path.is_file() and (name.endswith(".jsonl") or name.endswith(".jsonl.gz")):
        kind = sniff_jsonl(path)
        if kind == "revisions":
            yield from _revisions_jsonl(ws, path, report, prefix)
        elif kind in ("passages", "beir"):
            yield from _passages_jsonl(path, report, kind, prefix)
        else:
            report.skip(str(path), "JSONL records need `id` and `text` (passages), `_id` (BEIR), "
                        "or `path`, `revision` and `text` (revisions)")
        return
    root = base or (path if path.is_dir() else path.parent)
    files = [path] if path.is_file() else list(walk(path, ws.config.corpus.include, ws.config.corpus.exclude,
                                                    skip=lambda p, why: report.skip(str(p), why)))
    tree = git.work_tree(path)
    commits: dict[str, git.Commit] = {}
    changed: set[str] = set()
    if tree is not None:
        spec = str(path.resolve().relative_to(tree)) or "."
        try:
            commits = git.last_commits(tree, spec)
            changed = git.changed_files(tree, spec)
        except Exception:  # not a commit yet, or git missing: fall back to content hashes
            commits, changed = {}, set()
    for file in files:
        if progress:
            progress(str(file))
        try:
            rel = _relative(file, root)
            text = read_document(file)
        except SourceError as exc:
            report.skip(str(file), str(exc))
            continue
        repo_rel = _in_tree(file, tree)
        commit = commits.get(repo_rel) if repo_rel and repo_rel not in changed else None
        committed_at: str | None
        if commit:
            revision, committed_at = commit.sha, commit.committed_at
        else:
            revision, committed_at = content_revision(text), file_time(file)
        doc = _document(ws, prefix + rel, text, revision, committed_at, path=rel)
        if doc is None:
            report.skip(str(file), "only front matter, no text to index")
            continue
        yield doc
    if tree is not None and history:
        # After the working tree, so that on equal commit times HEAD stays current.
        yield from _git_history(ws, tree, spec, root, report, prefix, progress)


def _git_history(
    ws: Workspace, tree: Path, spec: str, root: Path, report: ImportReport, prefix: str, progress: Progress | None
) -> Iterator[DocRevision]:
    include = ws.config.corpus.include
    for repo_rel, commit, content in git.history(tree, spec):
        file = tree / repo_rel
        if not any(Path(repo_rel).match(p) for p in include):
            continue
        try:
            rel = _relative(file, root)
        except ValueError:
            continue
        if progress:
            progress(f"{repo_rel}@{commit.sha[:7]}")
        try:
            text = decode_document(content)
        except SourceError as exc:
            report.skip(f"{repo_rel}@{commit.sha[:7]}", str(exc))
            continue
        doc = _document(ws, prefix + rel, text, commit.sha, commit.committed_at, path=rel)
        if doc is not None:
            doc.historical = True
            yield doc


def _revisions_jsonl(ws: Workspace, path: Path, report: ImportReport, prefix: str) -> Iterator[DocRevision]:
    for number, record in iter_jsonl(path):
        if isinstance(record, SourceError):
            report.skip(str(path), str(record), number)
            continue
        missing = [k for k in ("path", "revision", "text") if not isinstance(record.get(k), str)]
        if missing:
            report.skip(str(path), f"expected string field(s) {', '.join(missing)}", number)
            continue
        if not record["text"].strip():
            report.skip(str(path), "empty document", number)
            continue
        rel = record["path"]
        doc = _document(
            ws, prefix + rel, record["text"], record["revision"], iso_utc(record.get("committed_at")),
            path=rel, url=record.get("url"),
        )
        if doc is None:
            report.skip(str(path), "only front matter, no text to index", number)
            continue
        yield doc


def _passages_jsonl(path: Path, report: ImportReport, kind: str, prefix: str) -> Iterator[DocRevision]:
    """Pre-chunked passages keep the user's ids. Each passage is its own document, so a
    newer revision of one passage makes that passage's older revision history."""
    id_key = "_id" if kind == "beir" else "id"
    first_line: dict[str, int] = {}
    for number, record in iter_jsonl(path):
        if isinstance(record, SourceError):
            report.skip(str(path), str(record), number)
            continue
        pid, text = record.get(id_key), record.get("text")
        if pid is None or pid == "" or not isinstance(text, str):
            report.skip(str(path), f"expected `{id_key}` and a string `text`", number)
            continue
        pid = prefix + str(pid)
        if not text.strip():
            report.skip(str(path), f"empty text for {pid!r}", number)
            continue
        if pid in first_line:
            report.skip(str(path), f"duplicate id {pid!r} (first on line {first_line[pid]})", number)
            continue
        first_line[pid] = number
        title = record.get("title") or None
        revision = str(record.get("revision") or content_revision((title or "") + "\n" + text))
        yield DocRevision(
            doc_id=pid,
            revision=revision,
            committed_at=iso_utc(record.get("updated_at") or record.get("committed_at")),
            path=record.get("path"),
            url=record.get("url"),
            title=title,
            format="passage",
            passages=[PassageRecord(id=pid, text=text, heading_path=[title] if title else [],
                                    tokens=len(text.split()), title=title)],
        )


def _document(
    ws: Workspace, doc_id: str, text: str, revision: str, committed_at: str | None, *, path: str, url: str | None = None
) -> DocRevision | None:
    fmt = detect_format(path)
    parsed = chunk_document(text, fmt, min_tokens=ws.config.corpus.min_tokens, max_tokens=ws.config.corpus.max_tokens)
    if not parsed.chunks:
        return None
    url = url or parsed.metadata.get("url") or parsed.metadata.get("source_url")
    return DocRevision(
        doc_id=doc_id,
        revision=revision,
        committed_at=committed_at,
        path=path,
        url=str(url) if url else None,
        title=parsed.title,
        format=fmt,
        passages=[
            PassageRecord(
                id=f"{doc_id}#{chunk.slug}",
                text=chunk.text,
                heading_path=list(chunk.heading_path),
                tokens=chunk.tokens,
                ordinal=i,
                title=parsed.title,
            )
            for i, chunk in enumerate(parsed.chunks)
        ],
    )


def _in_tree(file: Path, tree: Path | None) -> str | None:
    """`file`'s path in git work tree `tree` (None: no tree, or it leads out of it)."""
    if tree is None:
        return None
    try:
        return str(file.resolve().relative_to(tree))
    except ValueError:
        return None


def _relative(file: Path, root: Path) -> str:
    """The id path of `file` under `root`: its target's (a link inside the folder is
    the file it leads to), or, for a file named by itself that leads elsewhere, its own."""
    try:
        return file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        pass
    try:
        return file.absolute().relative_to(root.absolute()).as_posix()
    except ValueError:
        raise SourceError(f"outside {root}, the folder ids are taken from (--base)") from None
