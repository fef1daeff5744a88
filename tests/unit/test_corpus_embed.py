"""Dense turned on after the corpus was imported: `curator suggest` says how many passages
have no vector, and `curator corpus embed` embeds them (over a real /v1/embeddings server
on 127.0.0.1, through the real console script)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from curator.suggest import store
from curator.workspace import Workspace
from tests.conftest import write
from tests.fake_embeddings import fake_embeddings  # noqa: F401

CURATOR = str(Path(sys.executable).with_name("curator"))
DOCS = {
    "docs/ceph.md": "# Ceph cluster near full\n\nThe storage cluster is filling up; add OSDs or delete pools.\n",
    "docs/etcd.md": "# etcd no leader\n\nThe etcd members cannot elect a leader; check the network between them.\n",
}


def _curator(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CURATOR_REVIEWER": "tester", "OPENAI_API_KEY": "sk-test-secret"}
    return subprocess.run([CURATOR, *args], cwd=root, capture_output=True, text=True, env=env, timeout=60)


def test_dense_turned_on_later_is_reported_and_corpus_embed_fills_it(ws: Workspace, run_cli, fake_embeddings) -> None:  # noqa: F811
    write(ws.root, DOCS)
    assert run_cli(["corpus", "add", "docs"], cwd=ws.root).exit_code == 0  # no dense yet
    (ws.root / "curator.toml").write_text(
        f'[model]\nbase_url = "{fake_embeddings.url}"\n[suggest]\ndense = "openai"\nembedding_model = "fake-embed"\n')

    before = _curator(ws.root, "suggest", "members cannot elect leader", "--json")
    assert before.returncode == 0, before.stderr
    assert "2 of 2 current passages have no vector of fake-embed" in before.stderr
    assert "curator corpus embed" in before.stderr
    assert all(s["source"] != "dense" for row in json.loads(before.stdout)["suggestions"] for s in row["sources"])

    embedded = _curator(ws.root, "corpus", "embed", "--json")
    assert embedded.returncode == 0, embedded.stderr
    assert json.loads(embedded.stdout) == {"passages": 2, "embedded": 2, "cached": 0}
    assert store.count(ws, "fake-embed") == 2
    again = _curator(ws.root, "corpus", "embed", "--json")
    assert json.loads(again.stdout) == {"passages": 2, "embedded": 0, "cached": 2}

    after = _curator(ws.root, "suggest", "members cannot elect leader", "--json")
    assert after.returncode == 0 and "no vector" not in after.stderr
    rows = json.loads(after.stdout)["suggestions"]
    assert any(s["source"] == "dense" for s in rows[0]["sources"])
    assert "sk-test-secret" not in before.stderr + embedded.stderr + after.stderr


def test_corpus_embed_without_a_dense_retriever_says_what_to_set(ws: Workspace) -> None:
    out = _curator(ws.root, "corpus", "embed")
    assert out.returncode == 1
    assert "no dense retriever is configured" in out.stderr and "Traceback" not in out.stderr
