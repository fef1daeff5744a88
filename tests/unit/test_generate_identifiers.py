"""Identifier mining and the offline `--backend identifiers`."""

from __future__ import annotations

import pytest

from curator.generate import generate
from curator.generate.identifiers import contains_verbatim, mine


def test_mine_finds_each_kind_and_skips_urls_and_encodings():
    text = (
        "On CARRIER-E1042 the CarrierApiErrorRateHigh alert fires. Raise `parser.max_retries`, "
        "watch carrier_api_requests_total, pass --dry-run, and check /var/lib/curator/state. "
        "Files are UTF-8 or ISO-8859-1. See https://example.com/docs/red_hat_storage_guide/x.md"
    )
    found = {i.text: i.kind for i in mine(text)}
    assert found["CARRIER-E1042"] == "error_code"
    assert found["CarrierApiErrorRateHigh"] == "alert"
    assert found["parser.max_retries"] == "config_key"
    assert found["carrier_api_requests_total"] == "metric"
    assert found["--dry-run"] == "flag"
    assert found["/var/lib/curator/state"] == "path"
    assert "ISO-8859" not in found
    assert not any("red_hat" in t or "example.com" in t for t in found)


def test_contains_verbatim_needs_the_whole_identifier():
    assert contains_verbatim("What does PARSER-E101 mean?", "PARSER-E101")
    assert not contains_verbatim("What does PARSER-E1012 mean?", "PARSER-E101")
    assert not contains_verbatim("what does parser-e101 mean?", "PARSER-E101")


@pytest.fixture
def corpus_ws(ws):
    from curator.corpus import add_paths
    from curator.demo import demo_bundle

    add_paths(ws, [demo_bundle() / "corpus-history.jsonl"])
    add_paths(ws, [demo_bundle() / "corpus"])
    return ws


def test_identifiers_backend_queues_verbatim_questions_with_provenance(corpus_ws):
    demo_ws = corpus_ws
    before = {c.id for c in demo_ws.candidates(source_kind="generated")}
    summary = generate(demo_ws, backend="identifiers", passages=30, seed=3)
    assert summary.calls == 0
    new = [c for c in demo_ws.candidates(source_kind="generated") if c.id not in before]
    assert len(new) == summary.candidates_added > 5
    for c in new:
        ident = c.provenance["identifier"]
        assert c.suggested_slice == "exact_identifier"
        assert contains_verbatim(c.query, ident)
        primary = c.suggestions[0]
        assert primary.role == "primary" and primary.reason == "generated from"
        assert ident in demo_ws.passage(primary.id, primary.revision).text + demo_ws.passage(primary.id).heading
        assert c.provenance["prompt"] == "identifiers" and c.provenance["prompt_hash"]


def test_identifiers_backend_is_repeatable_and_skips_covered_passages(corpus_ws, tmp_path):
    import shutil

    from curator.workspace import Workspace

    demo_ws = corpus_ws
    copy = tmp_path / "copy"
    shutil.copytree(demo_ws.root, copy)
    other = Workspace.open(copy)
    a = generate(demo_ws, backend="identifiers", passages=15, seed=11)
    b = generate(other, backend="identifiers", passages=15, seed=11)
    queries = lambda w: sorted(c.query for c in w.candidates(source_kind="generated"))  # noqa: E731
    assert queries(demo_ws) == queries(other)
    assert a.candidates_added == b.candidates_added
    again = generate(demo_ws, backend="identifiers", passages=15, seed=11)
    # the passages it used are covered now: a rerun draws others, never the same questions
    assert again.passages_skipped_covered >= a.candidates_added
    assert len(set(queries(demo_ws))) == len(queries(demo_ws))
    other.close()


def test_demo_has_generated_candidates(demo_ws):
    generated = demo_ws.candidates(source_kind="generated")
    assert len(generated) >= 5
    assert all(c.suggested_slice == "exact_identifier" for c in generated)


ALERT_NAMES = ["etcdNoLeader", "KubeAPIErrorBudgetBurn", "CephOSDDown"]


def test_mine_finds_lower_camel_and_acronym_names_by_the_rule_mined_queries_use():
    from curator.logs.normalise import looks_like_identifier

    text = "If " + ", ".join(ALERT_NAMES) + " fire, check GitHub, OpenShift and Kubernetes; call getUserById."
    found = {i.text: i.kind for i in mine(text)}
    assert {name: found.get(name) for name in ALERT_NAMES} == dict.fromkeys(ALERT_NAMES, "alert")
    assert found.get("getUserById") == "code"
    assert not {"GitHub", "OpenShift", "Kubernetes"} & set(found)
    for name in ALERT_NAMES:  # one rule: what the logs call an identifier, generation mines
        assert looks_like_identifier(name) == any(i.text == name for i in mine(f"see {name} here"))


def test_generated_questions_on_lower_camel_and_acronym_alerts_suggest_exact_identifier(ws, tmp_path):
    from curator.corpus import add_paths
    from curator.logs.normalise import looks_like_identifier

    corpus = tmp_path / "runbooks"
    corpus.mkdir()
    for name in ALERT_NAMES:
        (corpus / f"{name}.md").write_text(
            f"# {name}\n\n{name} fires when the cluster has trouble. Check the members, read the logs of "
            "each one, compare their clocks and disks, and restart the failing one only after the others agree "
            "that it is behind.\n",
            encoding="utf-8")
    add_paths(ws, [corpus])
    generate(ws, backend="identifiers", passages=10, seed=1)
    made = {c.provenance["identifier"]: c for c in ws.candidates(source_kind="generated")}
    assert set(made) == set(ALERT_NAMES)
    for name, cand in made.items():
        assert cand.suggested_slice == "exact_identifier" and contains_verbatim(cand.query, name)
        assert looks_like_identifier(cand.query)  # a mined query of the same words suggests it alike
