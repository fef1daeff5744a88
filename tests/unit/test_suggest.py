"""Pooled suggestions: RRF, stored runs, the dense retriever over a real /v1/embeddings
server on 127.0.0.1, and `curator suggest --json` through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from curator.models import Suggestion
from curator.suggest import store
from curator.suggest.pool import Pool, fuse
from curator.workspace import Workspace
from tests.conftest import write
from tests.fake_embeddings import fake_embeddings  # noqa: F401

DOCS = {
    "docs/ceph.md": "# Ceph cluster near full\n\nThe storage cluster is filling up; add OSDs or delete pools.\n",
    "docs/etcd.md": "# etcd no leader\n\nThe etcd members cannot elect a leader; check the network between them.\n",
    "docs/disk.md": "# Disk pressure\n\nA node is low on disk space; clean images and logs.\n",
}
CURATOR = str(Path(sys.executable).with_name("curator"))


def _corpus(ws: Workspace, run_cli) -> None:
    write(ws.root, DOCS)
    result = run_cli(["corpus", "add", "docs"], cwd=ws.root)
    assert result.exit_code == 0, result.output


def test_rrf_sums_reciprocal_ranks_and_keeps_first_seen_order_on_ties() -> None:
    fused = fuse([("a", [("x", None), ("y", None)]), ("b", [("y", "r1"), ("z", None)])], rrf_k=60)
    assert [p.id for p in fused] == ["y", "x", "z"]
    y = fused[0]
    assert y.sources == [("a", 2), ("b", 1)] and y.revision == "r1"
    assert abs(y.score - (1 / 62 + 1 / 61)) < 1e-12
    # a duplicate inside one list counts once, at its best rank
    assert fuse([("a", [("x", None), ("x", None)])])[0].sources == [("a", 1)]


def test_stored_runs_that_hold_the_query_join_the_pool_up_to_depth(ws: Workspace, run_cli) -> None:
    _corpus(ws, run_cli)
    runs = ws.root / "retriever-runs"
    runs.mkdir(exist_ok=True)
    line = {"query_id": "node-out-of-space", "results": [{"id": "disk.md#disk-pressure"},
                                                          {"id": "etcd.md#etcd-no-leader"}]}
    other = {"query_id": "something-else", "results": [{"id": "ceph.md#ceph-cluster-near-full"}]}
    (runs / "splade.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(other) + "\n")
    (ws.root / "runs").mkdir(exist_ok=True)
    (ws.root / "runs" / "artefact.json").write_text('{"schema": "curator-run/1", "x": {"a": {"b": 1}}}')
    ws.config.suggest.depth = 1
    pooled = Pool(ws).suggest("node out of space")
    by_id = {p.id: p for p in pooled}
    assert by_id["disk.md#disk-pressure"].sources[-1] == ("run:splade.jsonl", 1)
    assert "etcd.md#etcd-no-leader" not in by_id  # rank 2 is past depth 1 (and BM25 misses it)
    assert all(not s.startswith("run:artefact") for p in pooled for s, _ in p.sources)


def test_log_clicks_come_first_as_their_own_source(ws: Workspace, run_cli) -> None:
    _corpus(ws, run_cli)
    own = [Suggestion(id="etcd.md#etcd-no-leader", reason="clicked")]
    pooled = Pool(ws).suggest("ceph cluster full", own=own)
    assert pooled[0].sources[0] == ("clicked", 1) or pooled[1].sources[0] == ("clicked", 1)
    assert ("bm25", 1) in next(p for p in pooled if p.id == "ceph.md#ceph-cluster-near-full").sources


def test_dense_over_a_real_embeddings_server_is_incremental_and_pooled(ws: Workspace, run_cli, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    (ws.root / "curator.toml").write_text(
        f'[model]\nbase_url = "{fake_embeddings.url}"\n[suggest]\ndense = "openai"\nembedding_model = "fake-embed"\n')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    ws2 = Workspace.open(ws.root)
    try:
        _corpus(ws2, run_cli)
        assert len(fake_embeddings.texts_sent()) == 3
        assert fake_embeddings.requests[0]["auth"] == "Bearer sk-test-secret"
        assert store.count(ws2, "fake-embed") == 3
        # one document changes: only its passage is embedded again
        write(ws2.root, {"docs/disk.md": "# Disk pressure\n\nA node is low on disk; prune images.\n"})
        result = run_cli(["corpus", "add", "docs"], cwd=ws2.root)
        assert result.exit_code == 0, result.output
        assert len(fake_embeddings.texts_sent()) == 4
        # the console script, as a user runs it: dense proposes the paraphrase's passage
        env = {**os.environ, "CURATOR_REVIEWER": "tester"}
        out = subprocess.run([CURATOR, "suggest", "members cannot elect leader", "--json"], cwd=ws2.root,
                             capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)["suggestions"]
        assert rows[0]["id"] == "etcd.md#etcd-no-leader"
        assert {s["source"] for s in rows[0]["sources"]} == {"bm25", "dense"}
        assert "sk-test-secret" not in out.stdout + out.stderr
    finally:
        ws2.close()


def test_a_failing_embeddings_endpoint_is_a_clear_error_not_a_traceback(ws: Workspace, fake_embeddings, run_cli) -> None:  # noqa: F811
    (ws.root / "curator.toml").write_text(
        f'[model]\nbase_url = "{fake_embeddings.url}"\nmax_retries = 0\n[suggest]\ndense = "openai"\nembedding_model = "m"\n')
    write(ws.root, DOCS)
    fake_embeddings.fail_next = 10
    env = {**os.environ, "CURATOR_REVIEWER": "tester"}
    out = subprocess.run([CURATOR, "corpus", "add", "docs"], cwd=ws.root, capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1
    assert "embeddings endpoint failed" in out.stderr and "Traceback" not in out.stderr


def test_suggest_offline_with_nothing_configured_is_bm25(ws: Workspace, run_cli) -> None:
    _corpus(ws, run_cli)
    env = {**os.environ, "CURATOR_REVIEWER": "tester"}
    out = subprocess.run([CURATOR, "suggest", "ceph", "cluster", "--json"], cwd=ws.root,
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["suggestions"]
    assert rows[0]["id"] == "ceph.md#ceph-cluster-near-full"
    assert rows[0]["sources"] == [{"source": "bm25", "rank": 1}]
