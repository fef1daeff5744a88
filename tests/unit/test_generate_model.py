"""`generate` with the real openai client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from curator.errors import CuratorError
from curator.generate import generate
from curator.generate.prompts import load_templates
from tests.unit import generate_corpus

pytest_plugins = ["tests.fake_openai"]  # the `fake_openai` fixture

KEY = "sk-test-DISTINCTIVE-9f8e7d6c5b4a3210"


@pytest.fixture
def gws(ws, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    generate_corpus.load(ws, tmp_path)
    return ws


def run(ws, server, **kw):
    kw.setdefault("passages", 20)
    kw.setdefault("backoff", None)
    kw.pop("backoff")
    return generate(ws, base_url=server.url, timeout=kw.pop("timeout", 5), **kw)


def task_rows(ws, run_id):
    return list(ws.db.query("SELECT * FROM generation_tasks WHERE run_id = ?", [run_id]))


def test_every_slice_with_provenance_and_labels(gws, fake_openai):
    summary = run(gws, fake_openai)
    assert summary.complete and summary.tasks_failed == 0
    assert set(summary.by_slice) == {"exact_identifier", "paraphrase", "negative", "freshness", "multi_hop"}
    # one call per passage for every single-passage slice, plus one per multi-hop group
    assert summary.calls == summary.tasks == summary.passages_selected + summary.by_slice["multi_hop"]
    templates = load_templates(None)
    cands = {c.suggested_slice: c for c in gws.candidates(source_kind="generated")}
    for slice_name, c in cands.items():
        assert c.provenance["prompt"] == slice_name
        assert c.provenance["prompt_version"] == templates[slice_name].version
        assert c.provenance["prompt_hash"] == templates[slice_name].hash
        assert c.provenance["model"] == "gpt-4o-mini"
        assert c.provenance["passages"] and c.rationale
    assert cands["negative"].expect_empty and cands["negative"].suggestions == []
    hop = cands["multi_hop"]
    assert hop.require_all and len(hop.suggestions) >= 2
    assert {s.role for s in hop.suggestions} == {"primary"}
    fresh = cands["freshness"]
    assert fresh.suggestions[0].revision == "bbb222"  # the current revision is labelled
    assert fresh.provenance["previous_revision"] == "aaa111"
    ident = cands["exact_identifier"]
    assert ident.provenance["identifier"] in ident.query
    # every call is logged with prompt hash, tokens and latency; prompt text stored once
    calls = list(gws.db.query("SELECT * FROM model_calls WHERE run_id = ?", [summary.run_id]))
    assert len(calls) == summary.calls and all(c["outcome"] == "ok" for c in calls)
    assert all(c["prompt_tokens"] > 0 and c["latency_ms"] > 0 and c["prompt_hash"] for c in calls)
    stored = {r["hash"] for r in gws.db.query("SELECT hash FROM prompt_texts")}
    assert {c["prompt_hash"] for c in calls} <= stored
    assert templates["paraphrase"].hash in stored
    # structured output was requested with the pydantic-derived schema
    body = fake_openai.requests[0]["body"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True


def test_rerun_makes_zero_calls(gws, fake_openai):
    first = run(gws, fake_openai)
    calls = fake_openai.chat_calls
    again = run(gws, fake_openai)
    assert fake_openai.chat_calls == calls
    assert again.calls == 0 and again.tasks_cached == first.tasks
    assert again.candidates_added == 0 and again.complete


def test_rerun_is_free_when_groups_cover_unselected_passages(ws, fake_openai):
    # multi-hop partners outside the selection become covered; the rerun must still
    # draw the same passages (and so hit the cache) rather than reshuffle
    from curator.corpus import add_paths
    from curator.demo import demo_bundle

    add_paths(ws, [demo_bundle() / "corpus"])
    first = run(ws, fake_openai, passages=8, multi_hop_ratio=1.0, group_size=3)
    assert first.by_slice["multi_hop"] >= 4
    again = run(ws, fake_openai, passages=8, multi_hop_ratio=1.0, group_size=3)
    assert again.calls == 0 and again.tasks_cached == first.tasks


def test_cache_keys_do_not_depend_on_the_process(gws):
    import subprocess
    import sys

    code = (
        "from curator.workspace import Workspace\n"
        "from curator.generate.pipeline import Generator, GenerateOptions\n"
        f"g = Generator(Workspace.open({str(gws.root)!r}), GenerateOptions())\n"
        "g._load_prompts()\n"
        "print(sorted(t.key for t in g._plan()))\n"
    )
    keys = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }
    assert len(keys) == 1 and "[]" not in keys


def test_interrupted_run_resumes_where_it_stopped(gws, fake_openai):
    stopped = run(gws, fake_openai, max_calls=2, concurrency=1)
    assert stopped.stopped and "--max-calls 2" in stopped.stopped
    assert fake_openai.chat_calls == 2 and stopped.tasks_not_run == stopped.tasks - 2
    statuses = Counter(r["status"] for r in task_rows(gws, stopped.run_id))
    assert statuses == {"ok": 2, "not_run": stopped.tasks - 2}
    resumed = run(gws, fake_openai)
    assert resumed.tasks_cached == 2 and resumed.calls == resumed.tasks - 2
    assert resumed.complete
    # no task was ever sent twice
    sent = Counter(json.dumps(r["body"]["messages"]) for r in fake_openai.requests)
    assert max(sent.values()) == 1


def test_every_passage_ends_with_candidates_or_a_recorded_failure(gws, fake_openai):
    fake_openai.fail("malformed", times=None, match="faq.md#")
    summary = run(gws, fake_openai)
    rows = task_rows(gws, summary.run_id)
    assert len(rows) == summary.tasks
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 1 and "faq.md" in failed[0]["passages"]
    assert "invalid JSON after one repair" in failed[0]["error"]
    assert all(r["candidates"] > 0 for r in rows if r["status"] == "ok")
    # the failure made exactly two calls: the request and one repair
    faq_calls = list(gws.db.query(
        "SELECT kind, outcome FROM model_calls WHERE run_id = ? AND passages LIKE '%faq.md%'",
        [summary.run_id]))
    assert [c["kind"] for c in faq_calls] == ["call", "repair"]
    assert summary.failures[0].passages == ["faq.md#frequently-asked-questions"]
    # not cached: the next run retries only the failed task
    fake_openai.faults.clear()
    before = fake_openai.chat_calls
    again = run(gws, fake_openai)
    assert fake_openai.chat_calls - before == 1 and again.complete


def test_retries_429_with_retry_after_500_and_timeouts(gws, fake_openai):
    fake_openai.fail("429", times=2, retry_after="0")
    fake_openai.fail("500", times=1)
    fake_openai.fail("slow", times=1, seconds=3)
    summary = run(gws, fake_openai, timeout=0.5, concurrency=2)
    assert summary.complete and summary.tasks_failed == 0
    rows = list(gws.db.query("SELECT outcome, status_code, error FROM model_calls WHERE run_id = ?",
                             [summary.run_id]))
    retries = [r for r in rows if r["outcome"] == "retry"]
    assert sorted(r["status_code"] for r in retries if r["status_code"]) == [429, 429, 500]
    assert any("timed out" in (r["error"] or "") for r in retries)
    assert summary.calls == summary.tasks + 4


def test_retries_stop_and_the_failure_is_recorded(gws, fake_openai):
    fake_openai.fail("500", times=None, match="limits.md#")
    summary = run(gws, fake_openai, max_retries=2)
    failed = [f for f in summary.failures if "limits.md#limits" in f.passages]
    assert failed and "HTTP 500" in failed[0].error
    n = gws.db.execute("SELECT count(*) FROM model_calls WHERE run_id = ? AND passages LIKE "
                       "'%limits.md%' AND status_code = 500", [summary.run_id]).fetchone()[0]
    assert n == 3  # the first try and two retries


def test_truncated_and_invalid_replies_get_one_repair(gws, fake_openai):
    fake_openai.fail("truncated", times=1, match="errors.md#")
    fake_openai.fail("invalid", times=1, match="faq.md#")
    summary = run(gws, fake_openai, concurrency=1)
    assert summary.complete
    kinds = Counter(r["kind"] for r in gws.db.query(
        "SELECT kind FROM model_calls WHERE run_id = ?", [summary.run_id]))
    assert kinds["repair"] == 2
    repair = next(r for r in fake_openai.requests if len(r["body"]["messages"]) == 4)
    assert "did not match the required JSON schema" in repair["body"]["messages"][3]["content"]


@pytest.mark.parametrize("fault", ["not_json", "html"])
def test_a_200_whose_body_is_not_a_completion_is_retried_then_recorded(gws, fake_openai, fault):
    """A proxy's HTML page or a cut-off body with HTTP 200: retried like a server error;
    when it persists the task fails with the reason, and every other task still ends."""
    fake_openai.fail(fault, times=1, match="errors.md#")
    fake_openai.fail(fault, times=None, match="limits.md#")
    summary = run(gws, fake_openai, concurrency=2, max_retries=1)
    rows = list(gws.db.query("SELECT passages, outcome, error FROM model_calls WHERE run_id = ?", [summary.run_id]))
    errors_md = [r["outcome"] for r in rows if "errors.md#" in r["passages"]]
    assert errors_md[:2] == ["retry", "ok"]
    assert all("not a chat completion" in r["error"] for r in rows if r["outcome"] in ("retry", "error"))
    failed = [f for f in summary.failures if "limits.md#limits" in f.passages]
    assert failed and "not a chat completion" in failed[0].error
    assert summary.tasks_not_run == 0  # every other task ran to its end
    assert {r["status"] for r in task_rows(gws, summary.run_id)} <= {"ok", "cached", "failed"}


def test_refusal_is_recorded_without_a_repair(gws, fake_openai):
    fake_openai.fail("refusal", times=None, match="errors.md#")
    summary = run(gws, fake_openai)
    failed = [f for f in summary.failures if f.passages == ["errors.md#parser-errors"]]
    assert failed and "refused" in failed[0].error
    outcomes = [r["outcome"] for r in gws.db.query(
        "SELECT outcome FROM model_calls WHERE run_id = ? AND passages = ?",
        [summary.run_id, json.dumps(["errors.md#parser-errors"])])]
    assert outcomes == ["refused"]


def test_falls_back_to_json_mode_when_json_schema_is_unsupported(gws, fake_openai):
    fake_openai.json_schema = False
    summary = run(gws, fake_openai, concurrency=1)
    assert summary.complete and summary.candidates_added > 0
    formats = [(r["body"].get("response_format") or {}).get("type") for r in fake_openai.requests]
    assert formats[0] == "json_schema" and set(formats[1:]) == {"json_object"}
    # the schema travels in the prompt instead
    assert "JSON schema" in fake_openai.requests[1]["body"]["messages"][0]["content"]


def test_refusals_in_flight_together_step_the_format_down_once(gws, fake_openai):
    """Under concurrency, every call sent as json_schema comes back 400; only the first
    refusal steps down, so nothing falls through to plain text."""
    fake_openai.json_schema = False
    fake_openai.latency = 0.05  # keep several calls in flight at once
    summary = run(gws, fake_openai, concurrency=6)
    assert summary.complete and summary.tasks_failed == 0
    formats = [(r["body"].get("response_format") or {}).get("type") for r in fake_openai.requests]
    assert formats.count("json_schema") > 1  # several were refused together
    assert set(formats) == {"json_schema", "json_object"}


def test_max_cost_stops_cleanly_and_needs_a_price(gws, fake_openai):
    summary = run(gws, fake_openai, max_cost=0.0)
    assert fake_openai.chat_calls == 0 and summary.tasks_not_run == summary.tasks
    assert "--max-cost" in summary.stopped
    with pytest.raises(CuratorError, match="needs a price for model 'local-llama'"):
        run(gws, fake_openai, model="local-llama", max_cost=1.0)


def test_dry_run_estimates_without_calling(gws, fake_openai):
    summary = run(gws, fake_openai, dry_run=True)
    assert fake_openai.chat_calls == 0
    assert summary.estimate["calls"] == summary.tasks > 0
    assert summary.estimate["prompt_tokens"] > 0 and summary.estimate["cost"] > 0
    run(gws, fake_openai)
    assert run(gws, fake_openai, dry_run=True).estimate["calls"] == 0  # all cached now


def test_slice_checks_reject_bad_questions(gws, fake_openai):
    from tests.fake_openai import canned_answer

    passage = {p.id: p for p in gws.passages()}

    def bad(body):
        answer = canned_answer(body)
        user = body["messages"][1]["content"]
        pid = user.split('id="', 1)[1].split('"', 1)[0]
        text = passage[pid].text
        for key in answer:
            if key == "exact_identifier":
                answer[key] = [{"question": "What does the error code mean here?", "identifier": "E-9",
                                "rationale": "r"}]
            elif key == "paraphrase":
                answer[key] = [{"question": " ".join(text.split()[:14]) + "?", "rationale": "r"}]
            elif key == "negative":
                answer[key] = [{"question": " ".join(text.split()[3:12]) + "?", "rationale": "r"}]
            elif key == "freshness":
                answer[key] = [{"question": "What is the API rate limit?", "old_answer": "25 per second",
                                "new_answer": "25 per second", "rationale": "r"}]
            elif key == "multi_hop":
                answer[key][0]["passages_used"] = answer[key][0]["passages_used"][:1]
        return answer

    fake_openai.responder = bad
    summary = run(gws, fake_openai)
    assert summary.candidates_added == 0
    reasons = set(summary.rejected)
    assert {
        "exact_identifier: does not quote an identifier from the passage verbatim",
        "paraphrase: paraphrase too close to the passage's wording",
        "negative: negative answered by the corpus",
        "freshness: the answer is the same in both revisions",
        "multi_hop: does not need every passage of the group",
    } <= reasons


def test_near_duplicates_are_dropped_within_and_across_runs(gws, fake_openai):
    from curator.models import Case
    from tests.fake_openai import canned_answer

    gws.question_set("main").add(
        Case(query_id="rate", query="how would someone raise the merchant rate limit", slice="paraphrase",
             relevant=[{"id": "limits.md#limits"}]), reviewer="t", versions=gws.versions())

    def same(body):
        answer = canned_answer(body)
        if "paraphrase" in answer:
            answer["paraphrase"] = [{"question": "How would someone raise the merchant rate-limit?",
                                     "rationale": "r"}]
        if "negative" in answer:
            answer["negative"] = [{"question": "is there a zeppelin marzipan policy for walruses",
                                   "rationale": "r"}]
        return answer

    fake_openai.responder = same
    summary = run(gws, fake_openai)
    paraphrases = gws.candidates(slice="paraphrase")
    negatives = gws.candidates(slice="negative")
    assert paraphrases == []  # near-duplicate of the existing case
    assert len(negatives) == 1  # identical across passages: kept once
    assert summary.rejected["near-duplicate of an existing question"] >= 1


def test_selection_is_stratified_seeded_and_skips_covered(ws):
    from curator.corpus import add_paths
    from curator.demo import demo_bundle
    from curator.generate.slices import select_passages
    from curator.models import CandidateIn, Suggestion

    add_paths(ws, [demo_bundle() / "corpus"])
    a, _ = select_passages(ws, 10, 5, min_words=25)
    b, _ = select_passages(ws, 10, 5, min_words=25)
    assert [p.id for p in a] == [p.id for p in b]
    assert len({p.doc_id for p in a}) == 10  # one per document first
    assert [p.id for p in select_passages(ws, 10, 6, min_words=25)[0]] != [p.id for p in a]
    # a log query's search-hit suggestion is a guess, not coverage
    ws.add_candidates([CandidateIn(query="q1", source_kind="log",
                                   suggestions=[Suggestion(id=a[2].id, reason="hit")])])
    assert [p.id for p in select_passages(ws, 10, 5, min_words=25)[0]] == [p.id for p in a]
    # a passage a generated candidate used is skipped; the others keep their places
    ws.add_candidates([CandidateIn(query="q2", source_kind="generated",
                                   suggestions=[Suggestion(id=a[3].id)])])
    c, skipped = select_passages(ws, 10, 5, min_words=25)
    assert skipped == 1 and a[3].id not in {p.id for p in c}
    assert [p.id for p in c][:3] == [p.id for p in a][:3]
    assert {p.id for p in a} - {a[3].id} <= {p.id for p in c}
    # naming a covered passage asks about it again
    again, _ = select_passages(ws, 10, 5, min_words=25, only={a[3].id})
    assert [p.id for p in again] == [a[3].id]


def test_the_api_key_never_reaches_db_logs_errors_or_output(gws, fake_openai, run_cli):
    summary = run(gws, fake_openai, passages=3)
    assert fake_openai.requests[0]["auth"] == f"Bearer {KEY}"  # the key is used...
    fake_openai.fail("auth", times=None)
    with pytest.raises(CuratorError) as err:
        run(gws, fake_openai, passages=5)
    assert KEY not in str(err.value)
    result = run_cli(["-w", str(gws.root), "generate", "-n", "5", "--base-url", fake_openai.url, "--json"])
    assert result.exit_code == 1 and KEY not in result.output
    gws.db.execute("PRAGMA wal_checkpoint(FULL)")
    for path in gws.state_dir.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
            assert KEY[-12:].encode() not in path.read_bytes(), path
    errors = [r[0] for r in gws.db.execute("SELECT error FROM model_calls WHERE error IS NOT NULL")]
    assert errors and all("[redacted]" in e for e in errors if "API key" in e)
    assert summary.complete
