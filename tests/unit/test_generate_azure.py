"""`generate` against Azure OpenAI: `openai.AsyncAzureOpenAI` with the fake server in
Azure's URL shape (/openai/deployments/<deployment>/chat/completions?api-version=...)."""

from __future__ import annotations

import json

import pytest

from curator.errors import CuratorError
from curator.generate import generate
from curator.workspace import Workspace
from tests.unit import generate_corpus

pytest_plugins = ["tests.fake_openai"]  # the `fake_openai` fixture

KEY = "0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c"  # Azure keys are 32 hex digits, not sk-...
OPENAI_KEY = "sk-test-OPENAI-not-for-azure-123456"
VERSION = "2024-10-21"


@pytest.fixture
def azure_ws(ws, tmp_path, monkeypatch):
    """A workspace with a corpus; no Azure settings from the developer's environment."""
    for name in ("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_AD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)  # must not be sent to Azure
    generate_corpus.load(ws, tmp_path)
    return ws


def configure(ws, toml: str) -> Workspace:
    (ws.root / "curator.toml").write_text(toml, encoding="utf-8")
    ws.close()
    return Workspace.open(ws.root)


def azure(ws, server, extra: str = "") -> Workspace:
    """The workspace reopened with [model] provider = "azure" against `server`."""
    return configure(ws, f'[model]\nprovider = "azure"\nazure_endpoint = "{server.root}"\n'
                         f'api_version = "{VERSION}"\n{extra}')


def chat_requests(server):
    return [r for r in server.requests if r["path"].endswith("/chat/completions")]


def test_azure_from_curator_toml_uses_deployment_path_version_and_api_key_header(azure_ws, fake_openai):
    ws = azure(azure_ws, fake_openai, 'name = "gpt-4o-mini"\ndeployment = "curator-mini"\n')
    summary = generate(ws, passages=4, timeout=5)
    assert summary.complete and summary.candidates_added > 0
    sent = chat_requests(fake_openai)
    assert len(sent) == summary.calls > 0
    for request in sent:
        assert request["path"] == "/openai/deployments/curator-mini/chat/completions"
        assert request["query"] == {"api-version": [VERSION]}
        assert request["api_key"] == KEY
        assert OPENAI_KEY not in (request["auth"] or "")
    # candidates and the call log name the model; the log also names the deployment
    cand = ws.candidates(source_kind="generated")[0]
    assert cand.provenance["model"] == "gpt-4o-mini"
    params = json.loads(next(ws.db.query("SELECT params FROM model_calls"))["params"])
    assert params["deployment"] == "curator-mini"
    ws.close()


def test_azure_from_the_clients_own_environment_variables(azure_ws, fake_openai, monkeypatch):
    monkeypatch.setenv("CURATOR_MODEL__PROVIDER", "azure")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", fake_openai.root)
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    ws = Workspace.open(azure_ws.root)
    summary = generate(ws, passages=2, timeout=5, model="gpt-4.1-mini")
    assert summary.complete
    request = chat_requests(fake_openai)[0]
    # without [model] deployment the deployment is named like the model
    assert request["path"] == "/openai/deployments/gpt-4.1-mini/chat/completions"
    assert request["query"] == {"api-version": ["2025-01-01-preview"]}
    assert request["api_key"] == KEY
    ws.close()


def test_azure_without_an_api_version_is_a_clear_error(azure_ws, fake_openai, run_cli):
    configure(azure_ws, f'[model]\nprovider = "azure"\nazure_endpoint = "{fake_openai.root}"\n').close()
    result = run_cli(["-w", str(azure_ws.root), "generate", "-n", "2"])
    assert result.exit_code == 1
    assert "Azure OpenAI is not fully configured" in result.output
    assert "OPENAI_API_VERSION" in result.output
    assert fake_openai.requests == []


def test_the_azure_key_never_reaches_db_logs_errors_or_output(azure_ws, fake_openai, run_cli):
    ws = azure(azure_ws, fake_openai)
    fake_openai.fail("auth", times=None)  # the server echoes the api-key header it got
    with pytest.raises(CuratorError) as err:
        generate(ws, passages=3, timeout=5)
    assert KEY not in str(err.value)
    result = run_cli(["-w", str(ws.root), "generate", "-n", "3", "--json"])
    assert result.exit_code == 1 and KEY not in result.output
    assert fake_openai.requests[0]["api_key"] == KEY  # the key was really sent...
    errors = [r[0] for r in ws.db.execute("SELECT error FROM model_calls WHERE error IS NOT NULL")]
    assert errors and all("[redacted]" in e for e in errors)  # ...and echoed back
    ws.db.execute("PRAGMA wal_checkpoint(FULL)")
    for path in ws.state_dir.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    ws.close()


def test_azure_batch_uses_azure_paths_and_the_deployment(azure_ws, fake_openai):
    ws = azure(azure_ws, fake_openai, 'deployment = "batch-mini"\n')
    summary = generate(ws, passages=2, slices=["paraphrase"], batch=True, poll_interval=0.01)
    assert summary.batch_status == "completed" and summary.candidates_added == 2
    paths = [r["path"] for r in fake_openai.requests]
    assert "/openai/files" in paths and "/openai/batches" in paths
    assert all(r["query"] == {"api-version": [VERSION]} for r in fake_openai.requests)
    assert all(r["api_key"] == KEY for r in fake_openai.requests)
    created = next(r for r in fake_openai.requests if r["path"] == "/openai/batches")
    assert created["body"]["endpoint"] == "/chat/completions"
    upload = fake_openai.files[created["body"]["input_file_id"]][1].decode()
    lines = [json.loads(line) for line in upload.splitlines()]
    assert {line["url"] for line in lines} == {"/chat/completions"}
    assert {line["body"]["model"] for line in lines} == {"batch-mini"}
    ws.close()


def test_an_entra_id_token_is_used_and_never_stored(azure_ws, fake_openai, monkeypatch):
    token = "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2duaXRpdmVzZXJ2aWNlcyJ9.c2lnbmF0dXJlLXRlc3Q"
    monkeypatch.delenv("AZURE_OPENAI_API_KEY")
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", token)
    ws = azure(azure_ws, fake_openai)
    fake_openai.fail("auth", times=None)  # echoes the bearer token it got
    with pytest.raises(CuratorError) as err:
        generate(ws, passages=2, timeout=5)
    assert fake_openai.requests[0]["auth"] == f"Bearer {token}"
    assert fake_openai.requests[0]["api_key"] is None
    assert token not in str(err.value)
    ws.db.execute("PRAGMA wal_checkpoint(FULL)")
    for path in ws.state_dir.rglob("*"):
        if path.is_file():
            assert token.split(".")[1].encode() not in path.read_bytes(), path
    ws.close()
