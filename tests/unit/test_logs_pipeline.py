"""The whole import: candidates, provenance, suggestions, dedupe, idempotency, privacy,
and the `curator import-logs` command (in-process and as the real console script)."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from curator.corpus import add_paths
from curator.errors import EXIT_PARTIAL, InputError
from curator.logs import import_logs
from curator.logs.redact import detect
from curator.models import Case, Relevant

DATA = Path(__file__).resolve().parent.parent / "data" / "logs"
REPO = Path(__file__).resolve().parents[2]
SECRETS = [
    "anna.kowalski@example.com", "7946 0958", "203.0.113.42", "2001:db8::8a2e", "4111 1111 1111 1111",
    "sk-live-gLKOmxgJTeKdNnFRIBXuDL7DxtpYlSXp", "eyJhbGciOiJIUzI1NiJ9", "AKIAIOSFODNN7EXAMPLE",
    "j.smith@merchant-example.org", "ops@example.net", "30 901820", "198.51.100.7", "billing@example.com",
    "anna@example.com",
]


@pytest.fixture
def cws(ws):
    add_paths(ws, [DATA / "corpus.jsonl"])
    return ws


def _db_text(ws) -> str:
    """Every value in the workspace database, as one string (to look for leaks)."""
    con = sqlite3.connect(ws.root / ".curator" / "workspace.db")
    try:
        return "\n".join(con.iterdump())
    finally:
        con.close()


def test_import_queues_clusters_with_provenance_and_existing_passages(cws) -> None:
    summary = import_logs(cws, [DATA / "search.jsonl"])
    assert summary.parsed == 14 and summary.rejected == 5 and summary.partial
    by_query = {c.query: c for c in cws.candidates()}
    dhl = by_query["dhl cutoff time"]
    assert dhl.count == 4 and dhl.source_kind == "log"
    forms = {v["query"] for v in dhl.provenance["variants"]}
    assert forms == {"dhl cutoff time", "DHL cutoff time", "cutoff time dhl", "dhl cutof time"}
    assert dhl.provenance["first_seen"] == "2026-10-01T08:00:00Z"
    assert dhl.provenance["last_seen"] == "2026-10-03T09:00:00Z"
    assert dhl.provenance["users"] == 3 and dhl.provenance["files"] == [str(DATA / "search.jsonl")]
    # clicked passages are primaries, other hits secondaries; unknown ids are dropped
    assert [(s.id, s.role, s.reason) for s in dhl.suggestions] == [
        ("carriers.md#dhl", "primary", "clicked"), ("faq.md#cutoffs", "secondary", "hit"),
    ]
    assert "CARRIER-E1043 packstation" in by_query  # never merged with E1042
    assert by_query["CARRIER-E1042 packstation"].suggested_slice == "exact_identifier"
    assert by_query["dhl cutoff time"].suggested_slice is None
    assert "reset password for <EMAIL>" in by_query
    assert "ManifestQueueStuck after v2.3.1 upgrade" in by_query
    assert "call back <PHONE> about parser.max_retries" in by_query


def test_the_work_after_reading_reports_its_stages(cws) -> None:
    """What the CLI's progress line shows once the bytes are read."""
    stages: list[str] = []
    summary = import_logs(cws, [DATA / "search.jsonl"], on_stage=stages.append)
    assert stages == [
        f"Grouping and clustering {summary.distinct_queries} distinct queries",
        f"Queueing {summary.sampled} clusters",
    ]


def test_nothing_personal_is_stored_or_printed(cws, run_cli) -> None:
    summary = import_logs(cws, [DATA / "search.jsonl", DATA / "ubi_queries.ndjson", DATA / "access.log"])
    stored = _db_text(cws)
    output = json.dumps(summary.to_dict())
    for secret in SECRETS:
        assert secret.lower() not in stored.lower() and secret.lower() not in output.lower(), secret
    for row in cws.candidates():
        assert detect(row.query) == []
        assert detect(json.dumps(row.provenance)) == []
    assert summary.redactions["email"] >= 3 and summary.redactions["card"] == 1


def test_the_demo_log_is_mined_without_leaks(ws, tmp_path: Path) -> None:
    log = tmp_path / "search.jsonl"
    shutil.copy(REPO / "datasets" / "demo" / "logs" / "search.jsonl", log)
    summary = import_logs(ws, [log], limit=0)
    assert summary.queued > 100 and summary.rejected == 2
    stored = _db_text(ws)
    for secret in ["j.smith@merchant-example.org", "+44 20 7946 0958", "203.0.113.42", "4111 1111 1111 1111",
                   "sk-live-", "eyJhbGci", "2001:DB8:85A3", "anna.kowalski"]:
        assert secret not in stored, secret
    queries = {c.query for c in ws.candidates()}
    assert {"CARRIER-E1042", "ManifestQueueStuck", "parser.max_retries default"} <= queries
    assert sum(summary.redactions.values()) >= 10


def test_reimport_is_idempotent_and_force_never_doubles(cws) -> None:
    first = import_logs(cws, [DATA / "search.jsonl"])
    before = {c.norm: c.count for c in cws.candidates()}
    again = import_logs(cws, [DATA / "search.jsonl"])
    assert again.files[0].status == "already imported" and again.queued == 0
    copy = cws.root / "copy-of-search.jsonl"
    shutil.copy(DATA / "search.jsonl", copy)  # other name, same content: the fingerprint knows
    assert import_logs(cws, [copy]).files[0].status == "already imported"
    forced = import_logs(cws, [DATA / "search.jsonl"], force=True)
    assert forced.queued == 0 and forced.duplicates["already a candidate"] == first.queued
    assert {c.norm: c.count for c in cws.candidates()} == before


def test_existing_cases_and_candidates_are_not_queued_again(cws) -> None:
    qs = cws.question_set("main")
    qs.add(Case(query_id="dhl-cutoff", query="DHL cutof time?", slice="paraphrase",
                relevant=[Relevant(id="carriers.md#dhl")]), reviewer="t", versions=cws.versions())
    qs.add(Case(query_id="e1042", query="carrier-e1042 packstation", slice="exact_identifier",
                relevant=[Relevant(id="errors.md#carrier-e1042")]), reviewer="t", versions=cws.versions())
    from curator.models import CandidateIn

    cws.add_candidates([CandidateIn(query="webhook failing from <IP> and <IP>", source_kind="generated")])
    summary = import_logs(cws, [DATA / "search.jsonl"])
    queries = {c.query for c in cws.candidates(source_kind="log")}
    assert "CARRIER-E1042 packstation" not in queries  # exact (normalised) case
    assert "dhl cutoff time" not in queries  # fuzzy: a typo away from a case
    assert "CARRIER-E1043 packstation" in queries  # a different code is not a duplicate
    assert summary.duplicates.get("already a case in main", 0) == 2
    assert summary.duplicates.get("already a candidate", 0) == 1


def test_dry_run_stores_nothing_and_sampling_respects_the_budget(cws) -> None:
    dry = import_logs(cws, [DATA / "search.jsonl"], dry_run=True, limit=3, sample="pps", seed=1)
    assert dry.sampled == 3 and len(dry.preview) == 3 and dry.queued == 0
    assert cws.candidates() == []
    assert list(cws.db.query("SELECT * FROM log_imports")) == []
    again = import_logs(cws, [DATA / "search.jsonl"], dry_run=True, limit=3, sample="pps", seed=1)
    assert [p["query"] for p in again.preview] == [p["query"] for p in dry.preview]


def test_filters_and_min_count(cws) -> None:
    summary = import_logs(cws, [DATA / "search.jsonl"], min_count=2, noise=["^reset"])
    assert {c.query for c in cws.candidates()} == {"dhl cutoff time"}
    assert summary.filtered["asked fewer than 2 times"] >= 5


def test_a_field_that_no_line_has_is_an_error_and_nothing_is_stored(cws) -> None:
    with pytest.raises(InputError, match=r"search.jsonl: none of its 20 lines has the query field 'nope'"):
        import_logs(cws, [DATA / "search.jsonl"], query_field="nope")
    assert cws.candidates() == []


def test_cli_json_partial_exit_and_every_format(cws, run_cli) -> None:
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "search.js*l"), str(DATA / "searches.csv"),
                      str(DATA / "queries.txt"), str(DATA / "access.log"), str(DATA / "ubi_queries.ndjson"),
                      "--json"])
    assert result.exit_code == EXIT_PARTIAL, result.output
    data = json.loads(result.output)
    formats = {Path(f["path"]).name: f["format"] for f in data["files"]}
    assert formats == {"search.jsonl": "jsonl", "searches.csv": "csv", "queries.txt": "text",
                       "access.log": "access", "ubi_queries.ndjson": "jsonl"}
    assert data["queued"] == len(cws.candidates()) > 10
    for secret in SECRETS:
        assert secret not in result.output


def test_cli_nested_fields_and_pre_aggregated_counts(cws, run_cli) -> None:
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "nested.jsonl.gz"),
                      "--query-field", "request.params.q", "--time-field", "ts"])
    assert result.exit_code == 0, result.output
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "aggregated.tsv"), "--count-field", "n"])
    assert result.exit_code == EXIT_PARTIAL and "not a whole number" in result.output
    counts = {c.query: c.count for c in cws.candidates()}
    assert counts["escalation policy"] == 42 and counts["dhl pickup window"] == 2
    assert counts["send invoice to <EMAIL>"] == 3


def test_cli_bad_options_are_usage_errors(cws, run_cli) -> None:
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "search.jsonl"), "--since", "yesterday-ish"])
    assert result.exit_code == 1 and "--since" in result.output
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "search.jsonl"), "--sample", "best"])
    assert result.exit_code == 2


def test_console_script_reads_stdin(cws) -> None:
    exe = Path(sys.executable).parent / "curator"
    data = (DATA / "queries.txt").read_bytes()
    proc = subprocess.run(
        [str(exe), "-w", str(cws.root), "import-logs", "-", "--json"], input=data, capture_output=True,
        timeout=60, env={**os.environ, "CURATOR_REVIEWER": "t"},
    )
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert out["files"][0]["path"] == "<stdin>" and out["files"][0]["format"] == "text"
    assert {c.query for c in cws.candidates()} == {"how to replay the dlq", "my ip is <IP>", "parser.max_retries default"}


@pytest.mark.slow
def test_console_script_in_a_terminal_shows_the_summary(cws) -> None:
    """In a terminal (a pty; subprocess, not a fork of this multi-threaded process) the
    summary is drawn, rejects first."""
    import pty

    exe = Path(sys.executable).parent / "curator"
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(exe), "-w", str(cws.root), "import-logs", str(DATA / "search.jsonl")],
                            stdin=follower, stdout=follower, stderr=follower,
                            env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"})
    os.close(follower)
    shown = b""
    try:
        while True:
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            shown += chunk
        proc.wait(timeout=60)
    finally:
        proc.kill()
        os.close(leader)
    assert b"broken JSON" in shown and shown.index(b"broken JSON") < shown.index(b"queued")
    assert proc.returncode == EXIT_PARTIAL
    assert len(cws.candidates()) > 5


def test_clicked_heading_anchor_suggests_the_passage_that_holds_it(ws, tmp_path) -> None:
    from curator.corpus import add_paths
    from curator.logs import import_logs
    from tests.conftest import write

    docs = write(tmp_path / "docs", {"errors.md": "# Errors\n\n## CARRIER-E1042\n\nAddress rejected.\n\n## CARRIER-E2001\n\nTimeout.\n"})
    add_paths(ws, [docs])
    (passage,) = [p.id for p in ws.passages()]
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"query": "what is CARRIER-E1042", "clicked": ["errors.md#carrier-e1042"], "hits": ["errors.md#carrier-e2001"]}\n'
    )
    import_logs(ws, [log])
    (candidate,) = ws.candidates()
    assert [(s.id, s.role, s.reason) for s in candidate.suggestions] == [(passage, "primary", "clicked")]


def test_each_filter_counts_its_queries_and_the_first_rule_that_applies_wins(cws, tmp_path: Path) -> None:
    kept = ["dhl cutoff time", "label printer offline", "union station parcel", "www notes for carriers",
            "it's or 12 labels", "aaa batteries shipping", "Reset the label printer"]
    dropped = {
        "noise (URL, probe or repeated character)": [
            "https://example.com/track?id=1", "WWW.example.com", "<script>alert(1)</script>",
            "1 UNION ALL SELECT password", "x' or '1'='1", "aAaAaA",
        ],
        "noise (no words left)": ["?!?!", "anna@example.com"],  # the e-mail leaves only <EMAIL>
        "shorter than 3 characters": ["ab", "?!"],
        "longer than 300 characters": ["x" * 301, "https://example.com/" + "a" * 300],
        "noise pattern": ["reset the printer queue", "URGENT dhl label"],  # on the norm, on the surface
        "empty query": ["   "],
    }
    log = tmp_path / "noise.jsonl"
    lines = [*kept, *(q for queries in dropped.values() for q in queries)]
    log.write_text("".join(json.dumps({"query": q}) + "\n" for q in lines))
    summary = import_logs(cws, [log], noise=["^reset the p", "URGENT"], limit=0)
    assert summary.filtered == {reason: len(queries) for reason, queries in dropped.items()}
    assert {c.query for c in cws.candidates()} == set(kept)


def test_forms_of_one_query_add_up_and_the_most_frequent_form_is_shown(cws, tmp_path: Path) -> None:
    log = tmp_path / "forms.jsonl"
    lines = [("Label Printer Offline", "2026-10-02T10:00:00Z"), ("label printer offline", "2026-10-01T10:00:00Z"),
             ("  label  printer offline ", "2026-10-04T10:00:00Z"), ("Label Printer Offline", "2026-10-03T10:00:00Z"),
             ("Track Parcel", "2026-10-01T10:00:00Z"), ("track parcel", "2026-10-01T11:00:00Z")]
    log.write_text("".join(json.dumps({"query": q, "timestamp": ts}) + "\n" for q, ts in lines))
    summary = import_logs(cws, [log])
    assert summary.distinct_queries == 5 and summary.distinct_normalised == 2
    by_query = {c.query: c for c in cws.candidates()}
    # 2 and 2 (the padded line is the lower-case form): a tie goes to the greater text
    label = by_query["label printer offline"]
    assert label.count == 4 and label.provenance["distinct_forms"] == 2
    assert label.provenance["variants"] == [{"query": "Label Printer Offline", "count": 2},
                                            {"query": "label printer offline", "count": 2}]
    assert (label.provenance["first_seen"], label.provenance["last_seen"]) == ("2026-10-01T10:00:00Z",
                                                                               "2026-10-04T10:00:00Z")
    assert by_query["track parcel"].count == 2


def test_cli_says_what_it_skipped_and_why(cws, run_cli) -> None:
    copy = cws.root / "copy-of-search.jsonl"
    shutil.copy(DATA / "search.jsonl", copy)
    both = ["-w", str(cws.root), "import-logs", str(DATA / "search.jsonl"), str(copy)]
    result = run_cli(both)
    assert "copy-of-search.jsonl: listed twice" in result.output and "counted once" in result.output
    assert "Next: curator review" in result.output  # something was queued
    result = run_cli(both[:4])
    assert "search.jsonl: already imported" in result.output and "--force reads it again" in result.output
    assert "Next: curator review" not in result.output


def test_an_empty_log_is_reported_and_the_others_are_imported(cws, run_cli, tmp_path: Path) -> None:
    """A glob over rotated logs often takes in an empty one: it is said to be empty, not
    an error that stops the import of the rest."""
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "blank.jsonl").write_bytes(b"\n  \n\t\n")
    (tmp_path / "empty.jsonl.gz").write_bytes(gzip.compress(b""))
    logs = [str(tmp_path / name) for name in ("empty.jsonl", "blank.jsonl", "empty.jsonl.gz")]
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "queries.txt"), *logs, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    status = {Path(f["path"]).name: (f["status"], f["lines"]) for f in data["files"]}
    assert status == {"queries.txt": ("imported", 5), "empty.jsonl": ("empty", 0), "blank.jsonl": ("empty", 3),
                      "empty.jsonl.gz": ("empty", 0)}
    assert data["queued"] == len(cws.candidates()) == 3
    result = run_cli(["-w", str(cws.root), "import-logs", logs[1]])
    assert result.exit_code == 0 and "blank.jsonl: empty (3 blank lines), nothing to import." in result.output


def test_a_gzip_damaged_before_anything_can_be_read_is_an_error_not_an_empty_log(cws, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00damaged")
    with pytest.raises(InputError, match="bad.jsonl.gz: a damaged or truncated gzip file: nothing in it can be read"):
        import_logs(cws, [bad])
    assert cws.candidates() == []


def test_the_console_script_imports_a_cut_off_compressed_csv_from_a_pipe_and_exits_3(cws, tmp_path: Path) -> None:
    """A log rotated while it was being compressed: the rows before the cut are queued,
    the cut is named with its line, the exit code says something was skipped, and no
    traceback (it was "Aborted!" from a pipe, and a traceback from a file)."""
    body = "query,user\n" + "".join(f"{['dhl cutoff time', 'ups pickup window'][i % 2]},u{i}\n" for i in range(50_000))
    packed = gzip.compress(body.encode())
    exe = Path(sys.executable).parent / "curator"
    proc = subprocess.run([str(exe), "-w", str(cws.root), "import-logs", "-", "--format", "csv", "--json"],
                          input=packed[: len(packed) // 2], capture_output=True)
    assert proc.returncode == EXIT_PARTIAL, proc.stderr
    assert b"Traceback" not in proc.stderr and b"Aborted" not in proc.stderr
    summary = json.loads(proc.stdout)
    (rejected,) = summary["files"][0]["rejected"].items()
    assert rejected[0].startswith("unreadable data") and rejected[1]["lines"] == [summary["lines"]]
    assert summary["queued"] == 2 and {c.query for c in cws.candidates()} == {"dhl cutoff time", "ups pickup window"}


def test_a_file_of_many_that_cannot_be_read_is_skipped_by_name_and_the_others_imported(cws, run_cli,
                                                                                       tmp_path: Path) -> None:
    """A glob over a log folder takes in an app log without the query field, or a gzip
    damaged at its start: each is named with its reason (exit 3), the rest is queued. If
    no file can be read, the first one's error stops the import and nothing is queued."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a-search.jsonl").write_text(json.dumps({"query": "dhl cutoff time"}) + "\n")
    (logs / "b-app.jsonl").write_text(json.dumps({"level": "info", "msg": "started"}) + "\n")
    (logs / "c-damaged.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00damaged")
    (logs / "d-search.jsonl").write_text(json.dumps({"query": "ups pickup window"}) + "\n")
    result = run_cli(["-w", str(cws.root), "import-logs", str(logs), "--json"])
    assert result.exit_code == EXIT_PARTIAL, result.output
    summary = json.loads(result.stdout)
    status = {Path(f["path"]).name: (f["status"], f["reason"]) for f in summary["files"]}
    assert status["a-search.jsonl"] == status["d-search.jsonl"] == ("imported", None)
    assert status["b-app.jsonl"][0] == "skipped" and "no query field found" in status["b-app.jsonl"][1]
    assert "--query-field" in status["b-app.jsonl"][1]
    assert status["c-damaged.jsonl.gz"][0] == "skipped" and "damaged or truncated gzip" in status["c-damaged.jsonl.gz"][1]
    assert summary["queued"] == 2 and {c.query for c in cws.candidates()} == {"dhl cutoff time", "ups pickup window"}
    text = run_cli(["-w", str(cws.root), "import-logs", str(logs / "b-app.jsonl"), str(logs / "c-damaged.jsonl.gz")])
    assert text.exit_code == 1 and "b-app.jsonl: no query field found" in text.output
    assert len(cws.candidates()) == 2


def test_the_console_script_says_empty_stdin_is_empty(cws) -> None:
    exe = Path(sys.executable).parent / "curator"
    proc = subprocess.run([str(exe), "-w", str(cws.root), "import-logs", "-", "--json"], input=b"",
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert out["files"] == [{**out["files"][0], "path": "<stdin>", "status": "empty", "lines": 0}]
    assert out["queued"] == 0


def test_the_summary_names_each_files_format_engine_and_fields(cws, run_cli) -> None:
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "queries.txt"), str(DATA / "search.jsonl"),
                      "--dry-run", "--engine", "python"])
    assert "queries.txt (text, python): 5 lines" in result.output  # a text file has no fields to name
    assert "search.jsonl (jsonl, python; query=query, time=timestamp" in result.output


def test_a_window_that_leaves_out_every_line_is_not_a_missing_field(cws, tmp_path: Path) -> None:
    log = tmp_path / "october.jsonl"
    log.write_text('{"query": "dhl cutoff time", "timestamp": "2026-10-02T08:00:00Z"}\n'
                   '{"text": "no query here", "timestamp": "2026-10-03T08:00:00Z"}\n')
    for engine in ("python", "duckdb"):
        summary = import_logs(cws, [log], since="2030-01-01", engine=engine, force=True)
        assert (summary.parsed, summary.queued) == (0, 0)
        assert summary.files[0].ignored == {"outside --since/--until": 1}
        assert summary.files[0].rejected["no 'query' field"]["count"] == 1


def test_since_after_until_is_an_error_before_anything_is_read(cws) -> None:
    from curator.errors import CuratorError

    with pytest.raises(CuratorError, match="--since 2026-10-09 is not before --until 2026-10-01"):
        import_logs(cws, [DATA / "search.jsonl"], since="2026-10-09", until="2026-10-01")
    with pytest.raises(CuratorError, match="is not before"):
        import_logs(cws, [DATA / "search.jsonl"], since="2026-10-01", until="2026-10-01")
    assert cws.candidates() == []


@pytest.mark.parametrize("sample", ["random", "pps"])
def test_a_drawn_sample_reports_its_seed_and_the_seed_draws_it_again(cws, run_cli, sample: str) -> None:
    base = ["-w", str(cws.root), "import-logs", str(DATA / "search.jsonl"), "--sample", sample, "--limit", "4",
            "--dry-run"]
    first = json.loads(run_cli([*base, "--json"]).output)
    assert isinstance(first["seed"], int)
    again = json.loads(run_cli([*base, "--json", "--seed", str(first["seed"])]).output)
    assert again["seed"] == first["seed"] and again["preview"] == first["preview"] and len(first["preview"]) == 4
    assert f"({sample}, seed {first['seed']}, limit 4)" in run_cli([*base, "--seed", str(first["seed"])]).output
    assert json.loads(run_cli([*base[:4], "--dry-run", "--json"]).output)["seed"] is None  # top draws nothing


def test_ctrl_c_is_a_word_and_exit_130_not_a_traceback(cws) -> None:
    """The real console script, waiting for a log on standard input, gets SIGINT."""
    import platform
    import signal

    if not Path("/proc/self/syscall").exists() or platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("needs Linux's /proc/PID/syscall to see the read")
    import time

    exe = Path(sys.executable).parent / "curator"
    # as from a terminal: a shell's background job (how CI may run us) starts its
    # children with SIGINT ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen([str(exe), "-w", str(cws.root), "import-logs", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.stdin.write(b"dhl cutoff time\n")  # and no end: it waits for more
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not _reading_stdin(proc.pid) and time.monotonic() < deadline:  # past the imports, in the read
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"Traceback" not in err
    assert cws.candidates() == []


def _reading_stdin(pid: int) -> bool:
    """Is the process blocked in read(0, ...)? (/proc/PID/syscall: number, then arguments)"""
    import platform

    read = {"x86_64": "0", "aarch64": "63"}[platform.machine()]
    try:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return call[:2] == [read, "0x0"]  # read, file descriptor 0


def test_an_interrupted_duckdb_query_is_a_keyboard_interrupt() -> None:
    """DuckDB stops a query on Ctrl-C and raises RuntimeError('Query interrupted'), or
    InterruptException when told to from another thread (as here: a signal can take
    DuckDB seconds to notice); either is the KeyboardInterrupt the CLI turns into 130."""
    import threading

    from curator.logs.duck_sql import Reader

    reader = Reader(lambda _fraction: None)
    timer = threading.Timer(0.3, reader.con.interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            timer.start()
            reader.query("SELECT count(*) FROM range(10000000000) t(i) WHERE hash(i) % 7 = 1", "endless")
    finally:
        timer.cancel()
        reader.close()


def test_curator_toml_sets_the_import_defaults_and_flags_override_them(cws, run_cli) -> None:
    (cws.root / "curator.toml").write_text(
        '[logs]\nquery_field = "request.params.q"\ntime_field = "ts"\nuser_field = "session"\n'
        'sample = "pps"\nlimit = 2\nengine = "python"\n', encoding="utf-8")
    base = ["-w", str(cws.root), "import-logs", str(DATA / "nested.jsonl.gz"), "--dry-run", "--json"]
    configured = json.loads(run_cli(base).output)
    assert configured["files"][0]["fields"] == {"query": "request.params.q", "time": "ts", "user": "session"}
    assert configured["files"][0]["engine"] == "python"
    assert (configured["sample"], configured["limit"], configured["sampled"]) == ("pps", 2, 2)
    assert isinstance(configured["seed"], int)
    flagged = json.loads(run_cli([*base, "--sample", "top", "--limit", "1", "--time-field", "",
                                  "--engine", "duckdb"]).output)
    assert flagged["files"][0]["fields"] == {"query": "request.params.q", "user": "session"}
    assert flagged["files"][0]["engine"] == "duckdb"
    assert (flagged["sample"], flagged["limit"], flagged["sampled"], flagged["seed"]) == ("top", 1, 1, None)


def test_environment_overrides_the_logs_section(cws, run_cli, monkeypatch) -> None:
    (cws.root / "curator.toml").write_text('[logs]\nquery_field = "nope"\n', encoding="utf-8")
    base = ["-w", str(cws.root), "import-logs", str(DATA / "nested.jsonl.gz"), "--dry-run", "--json"]
    assert run_cli(base).exit_code == 1  # no line has `nope`
    monkeypatch.setenv("CURATOR_LOGS__QUERY_FIELD", "request.params.q")
    monkeypatch.setenv("CURATOR_LOGS__LIMIT", "3")
    data = json.loads(run_cli(base).output)
    assert data["files"][0]["fields"]["query"] == "request.params.q" and data["limit"] == 3


def test_a_bad_logs_setting_names_the_file_and_the_key(cws, run_cli) -> None:
    (cws.root / "curator.toml").write_text('[logs]\nsample = "best"\n', encoding="utf-8")
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "search.jsonl"), "--dry-run"])
    assert result.exit_code == 1 and "curator.toml" in result.output
    assert "logs.sample: Input should be 'top', 'random' or 'pps'" in result.output


def test_a_pipe_named_as_a_path_is_read_once_like_stdin(cws, tmp_path: Path) -> None:
    """`curator import-logs <(zcat search.jsonl.gz)`: the shell passes /dev/fd/63, a pipe.
    Opening it twice (once to look at it, once to read it) used to lose its first MiB.
    The real console script, so that a regression fails on the timeout, not hangs."""
    import threading

    fifo = tmp_path / "search-pipe"
    os.mkfifo(fifo)
    data = gzip.compress((DATA / "search.jsonl").read_bytes())  # gzip, known by its first bytes

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), fifo.open("wb") as fh:
            fh.write(data)

    threading.Thread(target=write, daemon=True).start()
    exe = Path(sys.executable).parent / "curator"
    proc = subprocess.run([str(exe), "-w", str(cws.root), "import-logs", str(fifo), "--json", "--dry-run"],
                          capture_output=True, timeout=60)
    out = json.loads(proc.stdout)
    plain = import_logs(cws, [DATA / "search.jsonl"], dry_run=True, engine="python")
    assert (out["files"][0]["lines"], out["parsed"]) == (plain.files[0].lines, plain.parsed) == (20, 14)
    assert (out["files"][0]["engine"], out["files"][0]["format"]) == ("python", "jsonl")
    assert out["preview"] == plain.preview


def test_the_console_script_reads_gzip_on_stdin(cws) -> None:
    exe = Path(sys.executable).parent / "curator"
    proc = subprocess.run([str(exe), "-w", str(cws.root), "import-logs", "-", "--json", "--dry-run"],
                          input=gzip.compress((DATA / "search.jsonl").read_bytes()), capture_output=True, timeout=60)
    assert proc.returncode == EXIT_PARTIAL, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert (out["files"][0]["format"], out["parsed"]) == ("jsonl", 14)


def test_the_review_card_says_what_the_log_says_of_a_query(cws, tmp_path: Path) -> None:
    """Count, distinct users, when, written forms and searches that found nothing: the
    provenance the import stores, as the review card shows it."""
    from curator.tui.widgets.card import _log_facts

    log = tmp_path / "search.jsonl"
    lines = [{"query": "dhl cutoff time", "user_id": f"u{i % 3}", "timestamp": f"2026-10-0{1 + i % 2}T08:00:00Z",
              "result_count": i % 2} for i in range(6)]
    lines += [{"query": "DHL cutoff time ", "user_id": "u1", "timestamp": "2026-10-05T08:00:00Z"}]
    lines += [{"query": "label backlog", "user_id": "u9", "timestamp": "2026-10-03T09:00:00Z"}]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_logs(cws, [log])
    facts = {c.query: _log_facts(c.provenance, c.count) for c in cws.candidates()}
    assert facts == {
        "dhl cutoff time": ["asked 7× by 3 users", "2026-10-01 → 2026-10-05", "2 variants", "3 with no results"],
        "label backlog": ["asked 1× by 1 user", "2026-10-03"],
    }
    full = {"count": 5000, "users": 100, "users_at_least": True}
    assert _log_facts(full, 5000) == ["asked 5,000× by 100+ users"]


def test_a_byte_order_mark_is_not_part_of_the_first_query(cws, tmp_path: Path) -> None:
    log = tmp_path / "queries.txt"
    log.write_bytes(b"\xef\xbb\xbfdhl cutoff time\nlabel backlog\n")
    summary = import_logs(cws, [log], dry_run=True)
    assert sorted(p["query"] for p in summary.preview) == ["dhl cutoff time", "label backlog"]


def test_a_utf16_log_is_a_clear_error_with_the_fix(cws, tmp_path: Path) -> None:
    log = tmp_path / "search.jsonl"  # as PowerShell's `>` writes it
    log.write_bytes('{"query": "dhl cutoff time"}\n'.encode("utf-16"))
    with pytest.raises(InputError, match="search.jsonl: is UTF-16 text; logs are read as UTF-8") as raised:
        import_logs(cws, [log])
    assert "iconv -f UTF-16 -t UTF-8" in raised.value.hint
    assert cws.candidates() == []


def test_many_files_skipped_for_one_reason_are_named_a_few_then_counted(cws, run_cli, tmp_path: Path) -> None:
    for n in range(8):
        (tmp_path / f"rotated-{n}.jsonl").write_bytes(b"")
    result = run_cli(["-w", str(cws.root), "import-logs", str(DATA / "queries.txt"), str(tmp_path / "rotated-*.jsonl"),
                      "--dry-run"])
    assert result.output.count(": empty (no lines), nothing to import.") == 5
    assert "... and 3 more files empty" in result.output and "queries.txt (text, python)" in result.output
    data = json.loads(run_cli(["-w", str(cws.root), "import-logs", str(tmp_path / "rotated-*.jsonl"), "--dry-run",
                               "--json"]).output)
    assert [f["status"] for f in data["files"]] == ["empty"] * 8  # --json lists every file


def test_a_bad_redact_or_noise_pattern_is_named_before_anything_is_read(cws, run_cli) -> None:
    base = ["-w", str(cws.root), "import-logs", str(DATA / "search.jsonl")]
    result = run_cli([*base, "--redact", "TICKET=INC-(\\d"])
    assert result.exit_code == 1 and "redact pattern TICKET='INC-(\\\\d' is not a valid regex" in result.output
    result = run_cli([*base, "--noise", "^test("])
    assert result.exit_code == 1 and "noise pattern '^test(' is not a valid regex" in result.output
    assert cws.candidates() == []


def test_a_folder_is_its_files_but_hidden_ones_and_each_file_keeps_its_own_reject_lines(cws, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / ".DS_Store").write_bytes(b"Bud1\x00\x00\x00\x01junk")
    (folder / "a.jsonl").write_text('{"query": "dhl cutoff time"}\nnot json\n')
    (folder / "b.jsonl").write_text('{"query": "label backlog"}\n{"query": "x"}\nnot json either\n')
    summary = import_logs(cws, [folder], dry_run=True)
    assert [Path(f.path).name for f in summary.files] == ["a.jsonl", "b.jsonl"]
    # the first file's aggregate takes in the second's when merged: its summary must not
    assert [f.rejected["broken JSON"]["lines"] for f in summary.files] == [[2], [3]]


def test_queries_typed_at_a_terminal_end_with_one_ctrl_d(cws) -> None:
    """`curator import-logs -` at a prompt: stdin is a terminal, whose end of input holds
    for one read only; the queries are read to the first Ctrl-D, and it says so."""
    import pty

    exe = Path(sys.executable).parent / "curator"
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(exe), "-w", str(cws.root), "import-logs", "-", "--json", "--dry-run"],
                            stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(follower)
    try:
        os.write(leader, b"dhl cutoff time\nlabel backlog\n\x04")  # \x04: Ctrl-D
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()  # a regression waits for more input: it fails on the timeout, then stops
        os.close(leader)
    assert proc.returncode == 0, err.decode()
    assert b"end with Ctrl-D" in err
    assert sorted(p["query"] for p in json.loads(out)["preview"]) == ["dhl cutoff time", "label backlog"]


def test_the_probe_filter_finds_each_kind_of_probe_and_leaves_the_rest() -> None:
    from curator.logs.grouping import _PROBE

    texts = ["dhl cutoff", "x' OR '1'='1", "it's or 12 labels", "1 UnIoN aLl SeLeCt pw", "selection of labels",
             "<SCRIPT>alert(1)</script>", "union select", "ſelect union", "café' or 1=1", "union ſelect",
             "<script>", "<script>", "' or 1=1", "' or 1=1"]  # one right after another, at the start
    assert [k for k, t in enumerate(texts) if _PROBE.search(t)] == [1, 3, 5, 6, 8, 9, 10, 11, 12, 13]


@pytest.mark.parametrize("engine", ["duckdb", "python"])
def test_control_codes_and_invisible_characters_in_queries_are_neither_stored_nor_printed(cws, engine: str,
                                                                                         tmp_path: Path) -> None:
    """A log line can carry an escape sequence (a scanner's probe, a pasted coloured
    terminal line), a NUL, DEL, a C1 code, a bidi override or a zero-width space: they
    were stored in the candidate and the escape sequence reached the terminal in the
    table. Control codes become a space, invisible format characters go; the words stay,
    and so do the joiners Persian and emoji need."""
    import unicodedata

    queries = ["esc \x1b[31mred\x1b[0m text", "nul\x00byte", "del\x7fchar", "c1 \x9b31m csi", "zero\u200bwidth",
               "rtl \u202egnp.exe", "bom\ufeff start", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"]
    log = tmp_path / "controls.jsonl"
    log.write_text("".join(json.dumps({"query": q, "user": f"u{k}"}) + "\n" for k, q in enumerate(queries)))
    exe = Path(sys.executable).parent / "curator"
    proc = subprocess.run([str(exe), "-w", str(cws.root), "import-logs", str(log), "--engine", engine],
                          capture_output=True, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr
    stored = {c.query for c in cws.candidates()}
    assert stored == {"esc [31mred [0m text", "nul byte", "del char", "c1 31m csi", "zerowidth", "rtl gnp.exe",
                      "bom start", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"}
    assert not [q for q in stored for ch in q if unicodedata.category(ch) == "Cc" or unicodedata.bidirectional(ch)
                in ("LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI")]
    assert "\x1b" not in _db_text(cws) and "\x00" not in _db_text(cws)


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_a_rotated_log_compressed_later_is_the_same_file(cws, tmp_path: Path, engine: str) -> None:
    """logrotate's `compress delaycompress` (Debian's nginx default) keeps yesterday's log
    as `search.log.1` and compresses it a day later to `search.log.2.gz`: importing the
    folder each day counted it twice, the .gz being other bytes. A compressed file is
    known by its content now; a record an older build made (the .gz's stored bytes) too."""
    from curator.logs.sources import BlockHasher, combine

    rotated = tmp_path / "search.jsonl.1"
    shutil.copy(DATA / "search.jsonl", rotated)
    first = import_logs(cws, [rotated], engine=engine)
    assert first.files[0].status == "imported" and first.queued
    compressed = tmp_path / "search.jsonl.2.gz"
    compressed.write_bytes(gzip.compress(rotated.read_bytes()))
    rotated.unlink()
    again = import_logs(cws, [compressed], engine=engine)
    assert [f.status for f in again.files] == ["already imported"] and not again.queued
    both = import_logs(cws, [DATA / "search.jsonl", compressed], engine=engine, force=True, dry_run=True)
    assert [f.status for f in both.files] == ["imported", "listed twice"]
    # a workspace an older build wrote: the .gz known by its stored bytes, under another path
    hasher = BlockHasher()
    hasher.update(compressed.read_bytes())
    stored = combine(hasher.finish())
    cws.db.execute("DELETE FROM log_imports")
    cws.db.execute("INSERT INTO log_imports (fingerprint, label, windows) VALUES (?, 'old', ?)",
                   [stored, json.dumps([[None, None]])])
    cws.db.conn.commit()
    moved = tmp_path / "archive" / "search.jsonl.2.gz"
    moved.parent.mkdir()
    shutil.copy(compressed, moved)
    legacy = import_logs(cws, [moved], engine=engine)
    assert [f.status for f in legacy.files] == ["already imported"]


def _counts(ws) -> dict[str, int]:
    return {c.query: c.count for c in ws.candidates()}


@pytest.mark.parametrize("engine", ["python", "duckdb"])
def test_a_log_that_grew_is_read_from_where_its_import_ended(tmp_path: Path, engine: str) -> None:
    """Today's search.log, imported, then imported again once it grew: the earlier
    lines were read and counted again. Only the lines after them are read now (by the
    python reader, numbered as in the file), and the counts are the whole log's once."""
    from curator.workspace import Workspace

    lines = (DATA / "search.jsonl").read_bytes().splitlines(keepends=True)
    live = tmp_path / "search.log"
    live.write_bytes(b"".join(lines[:8]))
    grown = Workspace.init(tmp_path / "grown")
    once = Workspace.init(tmp_path / "once")
    try:
        first = import_logs(grown, [live], engine=engine, format="jsonl", limit=0)
        assert first.files[0].after_line is None and first.files[0].lines == 8
        with live.open("ab") as fh:
            fh.write(b"".join(lines[8:]))
        second = import_logs(grown, [live], engine=engine, format="jsonl", limit=0)
        f = second.files[0]
        assert (f.status, f.after_line, f.lines, f.engine) == ("imported", 8, len(lines) - 8, "python")
        assert all(n > 8 for r in f.rejected.values() for n in r["lines"])  # the file's own line numbers
        import_logs(once, [live], engine=engine, format="jsonl", limit=0)
        assert _counts(grown) == _counts(once) and sum(_counts(once).values()) > 10
        third = import_logs(grown, [live], engine=engine, format="jsonl", limit=0)
        assert third.files[0].status == "already imported"
    finally:
        grown.close()
        once.close()


def test_a_log_rewritten_or_cut_inside_a_line_is_read_whole(ws, tmp_path: Path) -> None:
    lines = (DATA / "search.jsonl").read_bytes().splitlines(keepends=True)
    live = tmp_path / "search.log"
    live.write_bytes(b"".join(lines[:6]))
    import_logs(ws, [live], format="jsonl")
    live.write_bytes(b"".join(lines[1:]))  # rotated and rewritten: other first bytes, longer
    assert import_logs(ws, [live], format="jsonl").files[0].after_line is None
    cut = tmp_path / "cut.log"
    cut.write_bytes(b"".join(lines[:6]) + lines[6][:20])  # the writer was inside a line
    import_logs(ws, [cut], format="jsonl")
    cut.write_bytes(b"".join(lines[:10]))
    assert import_logs(ws, [cut], format="jsonl").files[0].after_line is None
    windowed = tmp_path / "windowed.log"
    windowed.write_bytes(b"".join(lines[:6]))
    import_logs(ws, [windowed], format="jsonl", since="2026-10-02")  # its start imported for a window
    windowed.write_bytes(b"".join(lines[:10]))
    assert import_logs(ws, [windowed], format="jsonl").files[0].after_line is None  # the whole file wanted
