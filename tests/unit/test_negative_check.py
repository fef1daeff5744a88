"""Generated negatives checked against the corpus (issue 20, point 5): an identifier quoted
verbatim by a passage, or BM25's / the dense retriever's top hit holding the salient terms."""

from __future__ import annotations

from curator.generate import slices as sl
from curator.workspace import Workspace
from tests.conftest import write
from tests.fake_embeddings import fake_embeddings  # noqa: F401

DOCS = {
    "alerts/VirtApiRESTErrorsHigh.md": "# VirtApiRESTErrorsHigh\n\nMore than 5% of REST calls to virt-api failed.\n",
    "alerts/etcd.md": "# etcdNoLeader\n\nThe etcd cluster members have no leader. Check the peers.\n",
    "alerts/disk.md": "# Disk pressure\n\nA node is low on disk space; prune images.\n",
}


def _ws(ws: Workspace, run_cli) -> Workspace:
    write(ws.root, DOCS)
    assert run_cli(["corpus", "add", "alerts"], cwd=ws.root).exit_code == 0
    return ws


def test_identifier_quoted_verbatim_by_a_passage_rejects_the_negative(ws: Workspace, run_cli) -> None:
    _ws(ws, run_cli)
    # few of its words are in the runbook, so the 75% coverage rule alone lets it through
    question = "What should I do when VirtApiRESTErrorsHigh fires during a weekend on-call rotation shift?"
    hit = sl.negative_match(ws, question, 0.75)
    assert hit is not None and hit[0] == "VirtApiRESTErrorsHigh.md#virtapiresterrorshigh" and hit[1] == 1.0
    assert sl.question_identifiers("why does etcdNoLeader page at night") == ["etcdNoLeader"]


def test_split_words_meet_the_alert_name_and_a_real_negative_passes(ws: Workspace, run_cli) -> None:
    _ws(ws, run_cli)
    assert "leader" in sl.salient_terms("etcdNoLeader") and "etcd" in sl.salient_terms("etcdNoLeader")
    assert sl.negative_match(ws, "How do I rotate the payroll vendor's signing certificate?", 0.75) is None


def test_the_dense_top_hit_counts_when_configured(ws: Workspace, run_cli, fake_embeddings, monkeypatch) -> None:  # noqa: F811
    from curator.generate.candidates import _dense_top

    (ws.root / "curator.toml").write_text(
        f'[model]\nbase_url = "{fake_embeddings.url}"\n[suggest]\ndense = "openai"\nembedding_model = "e"\n')
    ws2 = Workspace.open(ws.root)
    try:
        _ws(ws2, run_cli)
        question = "members cluster peers leader"
        top = _dense_top(ws2, question)
        assert top is not None and top[0] == "etcd.md#etcdnoleader"
        # BM25 alone (no dense hit given) finds it too here; with a dense hit only, the
        # dense passage is the one named
        assert sl.negative_match(ws2, "zzz unrelated words", 0.75, top) is None
        assert sl.negative_match(ws2, question, 0.75, top) == ("etcd.md#etcdnoleader", 1.0)
    finally:
        ws2.close()
