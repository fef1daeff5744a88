"""`curator run` against real retrievers: HTTP on 127.0.0.1, a Python callable, a command."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.unit import harness_helpers
from tests.unit.harness_helpers import answer_for, start_server

TRICKY = 'why does "a\\b" & c=d fail?'


def _cases(ws) -> list:
    return [c for c in ws.question_set().read().cases.values() if c.status == "active"]


def _set_with(ws, queries: list[str]) -> None:
    qs = ws.question_set()
    for q in queries:
        qs.add({"query": q, "slice": "paraphrase", "relevant": [{"id": answer_for(q)[0]}]})


def _lines(path: Path) -> dict[str, dict]:
    return {r["query_id"]: r for r in map(json.loads, path.read_text().splitlines())}


@pytest.fixture
def server():
    srv = start_server()
    harness_helpers.SEEN.clear()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_the_toml_example_as_written_elasticsearch_shape(ws, run_cli, server) -> None:
    port = server.server_address[1]
    (ws.root / "curator.toml").write_text(f'''
[retrievers.es]
kind = "http"
url = "http://127.0.0.1:{port}/docs/_search"
method = "POST"
body = '{{"query": {{"match": {{"text": "{{query}}"}}}}, "size": {{k}}}}'
hits = "hits.hits"      # where the list of hits is
id = "_id"              # each hit's id (a dotted path inside the hit)
score = "_score"
revision = "_source.revision"
''')
    _set_with(ws, ["how to restart the exporter", TRICKY])
    result = run_cli(["run", "es", "--param", "model=e5-large", "--json"], cwd=ws.root)
    assert result.exit_code == 0, result.output
    assert TRICKY in harness_helpers.SEEN  # quotes, backslash and & arrived intact in the JSON body
    summary = json.loads(result.output)
    artefact = json.loads(Path(summary["artefact"]).read_text())
    block = artefact["retriever"]
    assert block["adapter"] == "http" and block["params"] == {"model": "e5-large"}
    assert block["url"] == f"http://127.0.0.1:{port}/docs/_search" and len(block["template_sha256"]) == 16
    assert all(q["latency_ms"] is not None for q in artefact["questions"].values())
    assert artefact["metrics"]["overall"]["success@5"] == 1.0
    run = _lines(ws.root / "retriever-runs" / "es.jsonl")
    first = next(iter(run.values()))
    assert first["results"][0]["revision"] == "r1" and first["timestamp"].endswith("Z")


def test_solr_get_url_encodes_the_query_and_header_secret_is_never_stored(ws, run_cli, server, monkeypatch) -> None:
    port = server.server_address[1]
    monkeypatch.setenv("SOLR_TOKEN", "s3cret-token")
    _set_with(ws, [TRICKY])
    result = run_cli(["run", "--kind", "http", "--method", "GET",
                      "--url", f"http://127.0.0.1:{port}/solr/docs/select?q={{query}}&rows={{k}}",
                      "--hits", "response.docs", "--id", "id", "--score", "score",
                      "--header", "Authorization: Bearer $SOLR_TOKEN", "--json"], cwd=ws.root)
    assert result.exit_code == 0, result.output
    assert harness_helpers.SEEN == [TRICKY]
    assert server.headers_seen[0]["Authorization"] == "Bearer s3cret-token"
    assert "s3cret" not in result.output
    for path in [*(ws.root / "runs").glob("*.json"), *(ws.root / "retriever-runs").glob("*")]:
        assert "s3cret" not in path.read_text()


def test_a_server_echoing_the_secret_in_its_error_never_gets_it_stored(ws, run_cli, server, monkeypatch) -> None:
    port = server.server_address[1]
    monkeypatch.setenv("ES_TOKEN", "s3cret-token")
    _set_with(ws, ["echo401 please"])
    result = run_cli(["run", "--kind", "http", "--url", f"http://127.0.0.1:{port}/x/_search",
                      "--body", '{"query": {"match": {"text": "{query}"}}, "size": {k}}', "--hits", "hits.hits",
                      "--id", "_id", "--header", "Authorization: Bearer $ES_TOKEN", "--retries", "0"], cwd=ws.root)
    assert result.exit_code == 3, result.output
    assert server.headers_seen[0]["Authorization"] == "Bearer s3cret-token"
    (record,) = _lines(ws.root / "retriever-runs" / "http.jsonl").values()
    assert record["error"].startswith("HTTP 401") and "Bearer ***" in record["error"]
    assert "s3cret" not in result.output
    for path in [*(ws.root / "runs").glob("*.json"), *(ws.root / "retriever-runs").glob("*")]:
        assert "s3cret" not in path.read_text()


def test_faults_are_recorded_per_query(ws, run_cli, server) -> None:
    port = server.server_address[1]
    _set_with(ws, ["fine query", "fail500 please", "slow one"])
    result = run_cli(["run", "--kind", "http", "--url", f"http://127.0.0.1:{port}/x/_search",
                      "--body", '{"query": {"match": {"text": "{query}"}}, "size": {k}}',
                      "--hits", "hits.hits", "--id", "_id", "--timeout", "0.3", "--retries", "1",
                      "--no-score", "--json"], cwd=ws.root)
    assert result.exit_code == 3, result.output  # partial: requests failed
    run = _lines(ws.root / "retriever-runs" / "http.jsonl")
    by_query = {c.query: run[c.query_id] for c in _cases(ws)}
    assert by_query["fine query"]["results"] and "error" not in by_query["fine query"]
    assert by_query["fail500 please"]["error"].startswith("HTTP 500") and by_query["fail500 please"]["results"] == []
    assert "timeout" in by_query["slow one"]["error"] and "latency_ms" not in by_query["slow one"]
    assert harness_helpers.SEEN.count("fail500 please") == 2  # one retry


def test_python_callable_retriever(ws, run_cli) -> None:
    _set_with(ws, ["one two three", "boom here"])
    result = run_cli(["run", "--kind", "python", "--function", "tests.unit.harness_helpers:python_retriever",
                      "--json"], cwd=ws.root)
    assert result.exit_code == 3, result.output
    run = _lines(ws.root / "retriever-runs" / "python.jsonl")
    by_query = {c.query: run[c.query_id] for c in _cases(ws)}
    assert by_query["one two three"]["results"][0] == {"id": "doc-3", "score": 1.0, "revision": "rev1"}
    assert "retriever exploded" in by_query["boom here"]["error"]


def test_command_retriever(ws, run_cli) -> None:
    _set_with(ws, ["alpha beta", "boom again"])
    helper = Path(harness_helpers.__file__)
    result = run_cli(["run", "--kind", "command", "--command", f"{sys.executable} {helper}", "--json"], cwd=ws.root)
    assert result.exit_code == 3, result.output
    # the JSON summary first; a late asyncio note on stderr (mixed in by CliRunner) may follow
    summary, _ = json.JSONDecoder().raw_decode(result.output)
    run = _lines(ws.root / "retriever-runs" / "command.jsonl")
    by_query = {c.query: run[c.query_id] for c in _cases(ws)}
    assert [r["id"] for r in by_query["alpha beta"]["results"]] == ["doc-2", "doc-x"]
    assert "cannot" in by_query["boom again"]["error"]
    assert summary["metrics"]["n"] == 2


def test_unknown_retriever_is_a_clear_error(ws, run_cli) -> None:
    _set_with(ws, ["q one"])
    result = run_cli(["run", "nope"], cwd=ws.root)
    assert result.exit_code == 1 and "no retriever 'nope'" in result.output and "Traceback" not in result.output


def test_concurrency_and_warmup(ws, run_cli, server) -> None:
    port = server.server_address[1]
    _set_with(ws, [f"query number {i}" for i in range(6)])
    result = run_cli(["run", "--kind", "http", "--url", f"http://127.0.0.1:{port}/x/_search",
                      "--body", '{"query": {"match": {"text": "{query}"}}, "size": {k}}', "--hits", "hits.hits",
                      "--id", "_id", "--concurrency", "3", "--warmup", "2", "--no-score"], cwd=ws.root)
    assert result.exit_code == 0, result.output
    assert len(harness_helpers.SEEN) == 8  # 2 warm-ups + 6 measured
    assert len(_lines(ws.root / "retriever-runs" / "http.jsonl")) == 6


def test_a_command_programs_start_up_is_not_any_querys_latency(ws, run_cli) -> None:
    # the program sleeps 1 s before it reads stdin; no query's latency may carry that second
    _set_with(ws, ["alpha beta", "gamma delta epsilon"])
    helper = Path(harness_helpers.__file__)
    result = run_cli(["run", "--kind", "command", "--command", f"{sys.executable} {helper} --slow-start",
                      "--no-score"], cwd=ws.root)
    assert result.exit_code == 0, result.output
    latencies = [r["latency_ms"] for r in _lines(ws.root / "retriever-runs" / "command.jsonl").values()]
    assert len(latencies) == 2 and max(latencies) < 500, latencies


def test_run_refuses_a_set_that_fails_verify_and_baseline_is_its_alias(demo_ws, run_cli) -> None:
    cases = demo_ws.root / "datasets" / "main" / "cases.jsonl"
    assert run_cli(["verify"], cwd=demo_ws.root).exit_code == 0  # records the checkpoint
    lines = cases.read_text().splitlines()
    cases.write_text("\n".join([lines[0].replace('"rev":1', '"rev":1,"tags":["x"]', 1) if '"tags"' not in lines[0]
                                else lines[0].replace('"tags":[', '"tags":["edited",', 1)] + lines[1:]) + "\n")
    refused = run_cli(["run", "baseline", "--no-score"], cwd=demo_ws.root)
    assert refused.exit_code == 1 and "fails verify" in refused.output and "--no-verify" in refused.output
    assert run_cli(["baseline"], cwd=demo_ws.root).exit_code == 1
    run = demo_ws.root / "retriever-runs" / "bm25.jsonl"
    run.unlink()
    done = run_cli(["run", "baseline", "--no-score", "--no-verify"], cwd=demo_ws.root)
    assert done.exit_code == 0, done.output
    assert run.exists()  # the same file as `curator baseline` writes


def test_every_request_failing_writes_the_run_but_scores_nothing(ws, run_cli) -> None:
    _set_with(ws, ["q one", "q two"])
    runs = list((ws.root / "runs").glob("*.json")) if (ws.root / "runs").exists() else []
    result = run_cli(["run", "--kind", "http", "--url", "http://127.0.0.1:9/none", "--body", '{"q": "{query}"}',
                      "--retries", "0", "--timeout", "2"], cwd=ws.root)
    assert result.exit_code == 3, result.output
    assert "every request failed" in result.output and "not scored" in result.output
    assert all("error" in r for r in _lines(ws.root / "retriever-runs" / "http.jsonl").values())
    after = list((ws.root / "runs").glob("*.json")) if (ws.root / "runs").exists() else []
    assert after == runs


def _documented_templates() -> dict[str, str]:
    """The four `[retrievers.*]` tables of docs/harness.md's Templates section, as written."""
    import re

    text = (Path(__file__).resolve().parents[2] / "docs" / "harness.md").read_text()
    section = text.split("## Templates", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```toml\n(.*?)```", section, flags=re.S)
    return {re.search(r"\[retrievers\.(\w+)\]", b).group(1): b for b in blocks}


@pytest.mark.parametrize("name", ["es", "solr", "vespa", "api"])
def test_each_documented_template_works_as_written(ws, run_cli, server, name: str) -> None:
    import re

    templates = _documented_templates()
    assert set(templates) == {"es", "solr", "vespa", "api"}
    port = server.server_address[1]
    # the docs' localhost:9200 / 8983 / 8080 / 8000 become the test server, nothing else changes
    toml = re.sub(r"http://localhost:\d+", f"http://127.0.0.1:{port}", templates[name])
    (ws.root / "curator.toml").write_text(toml)
    _set_with(ws, ["how to restart the exporter", TRICKY])
    result = run_cli(["run", name, "--no-score", "--k", "5"], cwd=ws.root)
    assert result.exit_code == 0, result.output
    assert TRICKY in harness_helpers.SEEN  # the query arrives intact in the URL or the body
    run = _lines(ws.root / "retriever-runs" / f"{name}.jsonl")
    by_query = {c.query: run[c.query_id] for c in _cases(ws)}
    for query, record in by_query.items():
        assert [r["id"] for r in record["results"]] == answer_for(query)
        assert record["results"][0]["score"] == 2.0 and record["latency_ms"] >= 0
    if name in ("es", "vespa"):
        assert record["results"][0]["revision"] == "r1"


@pytest.mark.parametrize("how", ["option", "environment"])
def test_requests_go_through_a_proxy(ws, run_cli, server, monkeypatch, how: str) -> None:
    # the test server doubles as a forward proxy: it sees the absolute URL of a host that
    # does not resolve, so an answer proves the request went through it
    port = server.server_address[1]
    monkeypatch.setenv("PROXY_PASS", "pr0xy-secret")
    proxy = f"http://user:$PROXY_PASS@127.0.0.1:{port}"
    args = ["run", "--kind", "http", "--url", "http://retriever.invalid/docs/_search",
            "--body", '{"query": {"match": {"text": "{query}"}}, "size": {k}}', "--hits", "hits.hits",
            "--id", "_id", "--retries", "0", "--json"]
    if how == "option":
        args += ["--proxy", proxy]
    else:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
    _set_with(ws, ["alpha beta"])
    result = run_cli(args, cwd=ws.root)
    assert result.exit_code == 0, result.output
    assert server.proxied == ["http://retriever.invalid/docs/_search"]
    summary, _ = json.JSONDecoder().raw_decode(result.output)
    if how == "option":
        assert summary["retriever"]["proxy"] == f"http://127.0.0.1:{port}"  # no credentials
    for path in [*(ws.root / "runs").glob("*.json"), *(ws.root / "retriever-runs").glob("*")]:
        assert "pr0xy-secret" not in path.read_text()
