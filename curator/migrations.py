"""Schema of `.curator/workspace.db`, as sqlite-utils migrations.

Append-only: a released migration is never edited or renamed (sqlite-utils records each
by its function name in `_sqlite_migrations`); change the schema by adding a function at
the end of this file. They run in file order, which is not the order of their numbers:

1. `m001_core`: meta, documents, document_revisions, passages and their FTS5 index
   `passages_fts`, candidates, decisions.
2. `m001_search_stats`: `passages_fts_vocab` and `term_stats`, the document frequency
   of every indexed word (search takes words rarest first).
3. `m003_generate`: prompt_texts, model_calls, generation_cache, generation_tasks,
   batches.
4. `m002_logs`: log_imports, one row per imported log file, keyed by its fingerprint.
5. `m006_triage`: triage_decisions.
6. `m007_log_import_windows`: log_imports.windows, the --since/--until windows a log
   file was imported for.
7. `m008_identifier_search`: passages.ident_terms and passages.path_terms (identifier
   parts, path words); `passages_fts` and its vocabulary rebuilt with those columns.
8. `m009_second_judgments`.
9. `m010_log_import_blocks`: log_imports.blocks and content_bytes, so a log that grew
   since it was imported is read from where that import ended.
"""

from __future__ import annotations

import curator._sqlite  # noqa: F401, I001  (first: sqlite_utils without pandas)

# isort: split
from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

migrations = Migrations("curator")


@migrations()
def m001_core(db: Database) -> None:
    db.table("meta").create({"key": str, "value": str}, pk="key")
    db.table("documents").create(
        {
            "id": str,
            "path": str,
            "url": str,
            "title": str,
            "format": str,
            "current_revision": str,
            "current_committed_at": str,
            "updated_at": str,
        },
        pk="id",
    )
    # One row per (document, revision) ever imported: re-importing one is a no-op.
    db.table("document_revisions").create(
        {"doc_id": str, "revision": str, "committed_at": str, "imported_at": str, "passages": int},
        pk=("doc_id", "revision"),
    )
    db.table("passages").create(
        {
            "rowid": int,
            "id": str,
            "revision": str,
            "doc_id": str,
            "path": str,
            "url": str,
            "title": str,
            "heading": str,  # heading path joined with " › ", indexed for search
            "heading_path": str,  # JSON list
            "text": str,
            "fingerprint": str,
            "tokens": int,
            "committed_at": str,
            "is_current": int,
            "ordinal": int,
        },
        pk="rowid",
    )
    db.table("passages").create_index(["id", "revision"], unique=True)
    db.table("passages").create_index(["doc_id", "is_current"])
    # External-content FTS5 index holding current passages only; rows are added and
    # removed by Workspace when a revision becomes (or stops being) current.
    db.execute(
        "CREATE VIRTUAL TABLE passages_fts USING fts5("
        "heading, text, content='passages', content_rowid='rowid', "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    db.table("candidates").create(
        {
            "id": int,
            "query": str,
            "norm": str,
            "source_kind": str,
            "state": str,
            "suggested_slice": str,
            "suggestions": str,  # JSON list of Suggestion
            "provenance": str,  # JSON object
            "rationale": str,
            "count": int,
            "expect_empty": int,
            "require_all": int,
            "created_at": str,
            "updated_at": str,
            "query_id": str,
            "set_name": str,
            "lease_owner": str,
            "lease_until": str,
        },
        pk="id",
    )
    db.table("candidates").create_index(["norm"], unique=True)
    db.table("candidates").create_index(["state", "source_kind"])
    db.table("decisions").create(
        {
            "id": int,
            "candidate_id": int,
            "action": str,
            "reviewer": str,
            "at": str,
            "set_name": str,
            "query_id": str,
            "detail": str,
        },
        pk="id",
        foreign_keys=[("candidate_id", "candidates", "id")],
    )
    db.table("decisions").create_index(["candidate_id"])


@migrations()
def m001_search_stats(db: Database) -> None:
    # Document frequency of every indexed term, refreshed after each import: search drops
    # terms so common that scoring them costs more than they tell (see Workspace.search).
    db.execute("CREATE VIRTUAL TABLE passages_fts_vocab USING fts5vocab(passages_fts, 'row')")
    db.execute("CREATE TABLE term_stats (term TEXT PRIMARY KEY, docs INTEGER) WITHOUT ROWID")
    db.execute("INSERT INTO term_stats SELECT term, doc FROM passages_fts_vocab")


@migrations()
def m003_generate(db: Database) -> None:
    # Prompt text is stored once, keyed by its content hash (calls and cache refer to it).
    db.table("prompt_texts").create(
        {"hash": str, "name": str, "version": str, "body": str, "created_at": str}, pk="hash"
    )
    # One row per HTTP attempt to the model (retries and repairs included); never the key.
    db.table("model_calls").create(
        {
            "id": int,
            "run_id": str,
            "at": str,
            "model": str,
            "prompt_hash": str,
            "prompt_name": str,
            "prompt_version": str,
            "task_key": str,
            "passages": str,  # JSON list of passage ids
            "params": str,  # JSON object
            "attempt": int,
            "kind": str,  # call | repair | batch
            "outcome": str,  # ok | retry | error | refused | invalid | repaired
            "status_code": int,
            "error": str,
            "prompt_tokens": int,
            "completion_tokens": int,
            "cost": float,
            "latency_ms": float,
            "batch_id": str,
        },
        pk="id",
    )
    db.table("model_calls").create_index(["run_id"])
    db.table("model_calls").create_index(["task_key"])
    # Validated model output per task: re-running the same work costs nothing.
    db.table("generation_cache").create(
        {
            "key": str,
            "model": str,
            "prompt_hash": str,
            "fingerprint": str,
            "params": str,
            "output": str,  # JSON
            "prompt_tokens": int,
            "completion_tokens": int,
            "created_at": str,
        },
        pk="key",
    )
    # What became of each unit of work in a run: candidates, or a recorded failure.
    db.table("generation_tasks").create(
        {
            "run_id": str,
            "task_key": str,
            "prompt": str,
            "passages": str,  # JSON list of passage ids
            "status": str,  # ok | cached | failed | not_run
            "error": str,
            "candidates": int,
            "rejected": str,  # JSON {reason: count}
            "at": str,
        },
        pk=("run_id", "task_key"),
    )
    db.table("batches").create(
        {
            "id": str,
            "run_id": str,
            "model": str,
            "input_file_id": str,
            "output_file_id": str,
            "error_file_id": str,
            "status": str,
            "tasks": str,  # JSON: custom_id -> task spec, so ingest needs nothing else
            "options": str,  # JSON: the generate options of the run
            "created_at": str,
            "updated_at": str,
            "ingested_at": str,
        },
        pk="id",
    )


@migrations()
def m002_logs(db: Database) -> None:
    # One row per log file imported by `curator import-logs`, keyed by its content
    # fingerprint, so that importing the same log again is recognised and skipped.
    db.table("log_imports").create(
        {
            "fingerprint": str,
            "label": str,
            "path": str,
            "size": int,
            "mtime_ns": int,
            "format": str,
            "lines": int,
            "parsed": int,
            "imported_at": str,
            "queued": int,
        },
        pk="fingerprint",
    )
    db.table("log_imports").create_index(["path", "size", "mtime_ns"])


@migrations()
def m006_triage(db: Database) -> None:
    # One row per triage decision (`curator triage`): which run's failing case, the cause the
    # reviewer named, what was done (relabel, repin, regression, undo) and the rev it appended.
    db.table("triage_decisions").create(
        {
            "id": int,
            "run": str,  # the artefact's file name in runs/
            "set_name": str,
            "query_id": str,
            "slice": str,
            "failure": str,  # the artefact's failure kind
            "cause": str,
            "note": str,
            "action": str,  # relabel | repin | regression | undo
            "rev": int,  # the rev it appended to cases.jsonl (None: nothing appended)
            "reviewer": str,
            "at": str,
            "undone_by": int,  # id of the undo row that took it back
        },
        pk="id",
    )
    db.table("triage_decisions").create_index(["run", "query_id"])


@migrations()
def m007_log_import_windows(db: Database) -> None:
    # The --since/--until windows each log file was imported for (JSON [since, until]
    # pairs, merged; null: an open end). NULL: imported whole, as every earlier row was
    # taken to be.
    db.table("log_imports").add_column("windows", str)


@migrations()
def m008_identifier_search(db: Database) -> None:
    # Identifier-aware search (issue 20): each passage also indexes its identifiers' parts
    # (`ident_terms`) and its document path's words (`path_terms`, a weighted column).
    # FTS5 tables cannot gain columns, so the index and its vocabulary are rebuilt.
    from curator.storage.terms import ident_terms, path_terms  # pure functions, no SQL

    passages = db.table("passages")
    passages.add_column("ident_terms", str)
    passages.add_column("path_terms", str)
    rows = db.execute("SELECT rowid, heading, text, coalesce(path, doc_id) FROM passages").fetchall()
    db.conn.executemany(
        "UPDATE passages SET ident_terms = ?, path_terms = ? WHERE rowid = ?",
        [(ident_terms(heading or "", text or ""), path_terms(path), rowid) for rowid, heading, text, path in rows],
    )
    db.execute("DROP TABLE passages_fts_vocab")
    db.execute("DROP TABLE passages_fts")
    db.execute(
        "CREATE VIRTUAL TABLE passages_fts USING fts5("
        "heading, text, ident_terms, path_terms, content='passages', content_rowid='rowid', "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    db.execute(
        "INSERT INTO passages_fts(rowid, heading, text, ident_terms, path_terms) "
        "SELECT rowid, heading, text, ident_terms, path_terms FROM passages WHERE is_current = 1"
    )
    db.execute("CREATE VIRTUAL TABLE passages_fts_vocab USING fts5vocab(passages_fts, 'row')")
    db.execute("DELETE FROM term_stats")
    db.execute("INSERT INTO term_stats SELECT term, doc FROM passages_fts_vocab")


@migrations()
def m009_second_judgments(db: Database) -> None:
    # Second judgments (issue 24, curator/judgments.py): each judgments.jsonl line this
    # workspace wrote or saw, with its hash, so verify can hold the file to the append-only
    # rule without git.
    db.table("judgments").create(
        {"id": int, "set_name": str, "line_hash": str, "target": str, "reviewer": str, "decision": str,
         "line": str, "at": str},
        pk="id", not_null={"set_name", "line_hash"},
    )
    db.table("judgments").create_index(["set_name", "line_hash"])


@migrations()
def m010_log_import_blocks(db: Database) -> None:
    # A log file's block digests (JSON: the hex SHA-256 of each 8 MiB block of its
    # content, the last one partial) and its length in bytes: a file that begins with
    # them is the imported one grown (KnownImports.grown). NULL: not known (older rows).
    db.table("log_imports").add_column("blocks", str)
    db.table("log_imports").add_column("content_bytes", int)
