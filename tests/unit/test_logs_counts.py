"""Clusters and counts across imports: typo duplicates join their cluster, different
identifiers stay apart, a query queued from an earlier log gains the later log's
counts, alert names get the exact-identifier slice, and queueing and recording an
import are one transaction."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from curator.logs import import_logs
from curator.logs.cluster import cluster
from curator.logs.normalise import looks_like_identifier, normalize_query

# (the big form, how often, its typo or run-together form): the examples
TYPOS = [
    ("cluster operator degraded how to debug", 198, "cluster operator degraded how to deug"),
    ("cluster operator degraded", 120, "clusteroperator degraded"),
    ("jenkins pipeline stuck in queue", 90, "jenkins pipeline stuck inqueue"),
    ("persistent volume filling up fast", 70, "persistent volume filling up fst"),
]
# different identifiers: their letters are close, their parts or digits are not
APART = [("etcdGRPCRequestsSlow", "etcdGRPCWriteRequestsSlow"), ("CARRIER-E1042", "CARRIER-E1043")]


def _clusters(queries: list[str], counts: list[int]) -> list[set[str]]:
    norms = [normalize_query(q) for q in queries]
    found = cluster(norms, counts, 88, queries)
    return [{queries[i] for i in found.members(c)} for c in range(len(found))]


def test_typos_that_move_a_word_in_the_sorted_form_join_their_cluster() -> None:
    queries = [q for big, _n, typo in TYPOS for q in (big, typo)]
    counts = [n for _big, n, _typo in TYPOS for n in (n, 1)]
    groups = _clusters(queries, counts)
    for big, _n, typo in TYPOS:
        assert {big, typo} in groups


def test_different_identifiers_never_join_however_close_their_letters() -> None:
    queries = [q for pair in APART for q in pair] + ["ManifestQueueStuck", "ManifestQueueStuk"]
    groups = _clusters(queries, [10, 9, 8, 7, 5, 1])
    for a, b in APART:
        assert {a} in groups and {b} in groups
    assert {"ManifestQueueStuck", "ManifestQueueStuk"} in groups  # a typo in a part is still a typo


@pytest.mark.parametrize("name", ["etcdNoLeader", "KubeAPIErrorBudgetBurn", "CephOSDDown", "VirtAPIDown",
                                  "KubeletDown", "NodeFilesystemAlmostFull", "ManifestQueueStuck"])
def test_lower_camel_and_acronym_alert_names_are_identifiers(name: str) -> None:
    assert looks_like_identifier(name)
    assert looks_like_identifier(f"why is {name} firing")


@pytest.mark.parametrize("query", ["Kubernetes upgrade", "Storage full", "NASA", "HTTP timeout", "GitHub actions",
                                   "OpenShift upgrade", "JavaScript error", "iPhone app", "PostgreSQL backup",
                                   "IPv6 address", "macOS install", "the quick brown fox"])
def test_ordinary_words_and_brands_are_not_identifiers(query: str) -> None:
    assert not looks_like_identifier(query)


def _log(path: Path, rows: list[tuple[str, int, str, str]]) -> Path:
    """A JSON Lines log: (query, times, day, user prefix) -> that many lines."""
    lines = []
    for query, n, day, user in rows:
        for i in range(n):
            lines.append(json.dumps({"query": query, "ts": f"2026-{day}T{10 + i % 10}:00:00Z", "user": f"{user}{i % 3}"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_alert_name_queries_get_the_exact_identifier_slice(ws, tmp_path: Path) -> None:
    names = ["etcdNoLeader", "KubeAPIErrorBudgetBurn", "CephOSDDown", "VirtAPIDown", "KubeletDown"]
    log = _log(tmp_path / "alerts.jsonl", [(f"{n} firing", 2, "10-01", "u") for n in names]
               + [("how to restart a pod", 2, "10-01", "u")])
    import_logs(ws, [log], limit=0)
    slices = {c.query: c.suggested_slice for c in ws.candidates()}
    assert {slices[f"{n} firing"] for n in names} == {"exact_identifier"}
    assert slices["how to restart a pod"] is None


def test_a_typo_log_leaves_no_typo_queued_beside_its_cluster(ws, tmp_path: Path) -> None:
    rows = [(big, n, "10-01", "a") for big, n, _typo in TYPOS] + [(typo, 1, "10-02", "b") for _b, _n, typo in TYPOS]
    rows += [(q, 3, "10-03", "c") for pair in APART for q in pair]
    import_logs(ws, [_log(tmp_path / "first.jsonl", rows)], limit=0)
    queued = {c.query for c in ws.candidates()}
    assert not queued & {typo for _b, _n, typo in TYPOS}
    assert {q for pair in APART for q in pair} <= queued
    # a later log of typos alone: each is a duplicate of its queued cluster
    later = import_logs(ws, [_log(tmp_path / "typos.jsonl", [(typo, 2, "11-01", "d") for _b, _n, typo in TYPOS])],
                        limit=0)
    assert later.queued == 0 and later.duplicates == {"already a candidate": len(TYPOS)}


def test_a_second_log_adds_its_counts_users_and_times_to_what_is_queued(ws, tmp_path: Path, run_cli) -> None:
    first = _log(tmp_path / "october.jsonl", [("dhl cutoff time", 5, "10-03", "oct"), ("ups pickup window", 4, "10-05", "oct")])
    second = _log(tmp_path / "november.jsonl", [("DHL cutoff time", 3, "11-20", "nov"), ("dhl cutof time", 2, "11-21", "nov"),
                                                 ("royal mail label", 6, "11-02", "nov")])
    assert import_logs(ws, [first], limit=0).queued == 2
    result = run_cli(["-w", str(ws.root), "import-logs", str(second), "--limit", "0"])
    assert result.exit_code == 0, result.output
    assert "updated" in result.output and "1 queued candidates gained" in result.output
    dhl = next(c for c in ws.candidates() if c.norm == "dhl cutoff time")
    assert dhl.count == 10 and dhl.provenance["count"] == 10
    assert dhl.provenance["first_seen"].startswith("2026-10-03") and dhl.provenance["last_seen"].startswith("2026-11-21")
    assert dhl.provenance["users"] == 6 and dhl.provenance["users_summed"]  # 3 + 3: no names kept to compare
    assert dhl.provenance["files"] == [str(first), str(second)]
    assert {v["query"]: v["count"] for v in dhl.provenance["variants"]} == {
        "dhl cutoff time": 5, "DHL cutoff time": 3, "dhl cutof time": 2}
    ups = next(c for c in ws.candidates() if c.norm == "ups pickup window")
    assert ups.count == 4  # not in the second log: unchanged
    # reading the second log again (--force) counts it in once, not twice; --json says so
    again = run_cli(["-w", str(ws.root), "import-logs", str(second), "--limit", "0", "--force", "--json"])
    summary = json.loads(again.output)
    assert summary["updated"] == 0 and summary["queued"] == 0
    assert next(c for c in ws.candidates() if c.norm == "dhl cutoff time").count == 10


def test_a_budget_filled_by_new_queries_still_updates_the_queued_ones(ws, tmp_path: Path) -> None:
    import_logs(ws, [_log(tmp_path / "a.jsonl", [("parser error code", 2, "10-01", "a")])], limit=0)
    rows = [(f"new question {w}", 9, "11-01", "b") for w in ("alpha", "bravo", "charlie")]
    summary = import_logs(ws, [_log(tmp_path / "b.jsonl", [*rows, ("parser error code", 1, "11-02", "b")])], limit=2)
    assert summary.queued == 2 and summary.updated == 1
    assert next(c for c in ws.candidates() if c.norm == "parser error code").count == 3


def test_a_failure_while_recording_the_import_queues_nothing_so_a_rerun_queues_one_limit(ws, tmp_path: Path) -> None:
    log = _log(tmp_path / "search.jsonl", [(f"question number {w}", 3, "10-01", "u")
                                           for w in ("one", "two", "three", "four", "five", "six")])
    db = sqlite3.connect(ws.root / ".curator" / "workspace.db")
    # the write of the import record fails, as a kill between the two writes would leave it
    db.execute("CREATE TRIGGER fail_record BEFORE INSERT ON log_imports BEGIN SELECT RAISE(ABORT, 'killed'); END")
    db.commit()
    with pytest.raises(sqlite3.DatabaseError, match="killed"):
        import_logs(ws, [log], limit=2)
    assert ws.candidates() == []  # the candidates went with the record
    db.execute("DROP TRIGGER fail_record")
    db.commit()
    db.close()
    assert import_logs(ws, [log], limit=2).queued == 2
    assert import_logs(ws, [log], limit=2).files[0].status == "already imported"
    assert len(ws.candidates()) == 2


def test_a_queued_identifier_is_not_a_duplicate_of_another_identifier(ws, tmp_path: Path) -> None:
    import_logs(ws, [_log(tmp_path / "a.jsonl", [(a, 4, "10-01", "a") for a, _b in APART])], limit=0)
    later = import_logs(ws, [_log(tmp_path / "b.jsonl", [(b, 2, "11-01", "b") for _a, b in APART]
                                  + [("etcdGRPCRequestSlow", 1, "11-02", "b")])], limit=0)
    queued = {c.query for c in ws.candidates()}
    assert {b for _a, b in APART} <= queued and later.queued == len(APART)
    # a typo inside a part of a queued identifier is a duplicate of it, and adds its count
    assert later.duplicates == {"already a candidate": 1} and later.updated == 1
    assert next(c for c in ws.candidates() if c.query == "etcdGRPCRequestsSlow").count == 5
