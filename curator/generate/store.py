"""Generate's own tables: every SQL statement of `curator generate` is here.

The generation cache holds validated model output keyed on (model, prompt hash, passage
fingerprints, parameters): a task whose key is cached costs nothing to run again, so an
interrupted run resumes where it stopped. Also prompt texts (stored once by hash), one
row per model call, what became of each task, and submitted batches. Writes hold
`ws.lock`: the connection is shared with the ingest thread of a live run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from curator.models import utcnow
from curator.text import sha256_hex

if TYPE_CHECKING:
    from curator.workspace import Workspace


def cache_key(model: str, prompt_hash: str, fingerprints: list[str], params: dict[str, Any]) -> str:
    body = json.dumps(
        {"model": model, "prompt": prompt_hash, "passages": fingerprints, "params": params},
        sort_keys=True,
    )
    return sha256_hex(body)[:32]


def cached(ws: Workspace, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The cached output of each of `keys` that has one."""
    found: dict[str, dict[str, Any]] = {}
    for i in range(0, len(keys), 500):
        chunk = keys[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for key, output in ws.db.execute(
            f"SELECT key, output FROM generation_cache WHERE key IN ({marks})", chunk
        ):
            found[key] = json.loads(output)
    return found


def cache_put(ws: Workspace, key: str, *, model: str, prompt_hash: str, fingerprints: list[str],
              params: dict[str, Any], output: dict[str, Any], prompt_tokens: int,
              completion_tokens: int) -> None:
    with ws.lock:
        ws.db.table("generation_cache").upsert(
            {
                "key": key,
                "model": model,
                "prompt_hash": prompt_hash,
                "fingerprint": ",".join(fingerprints),
                "params": json.dumps(params, sort_keys=True),
                "output": json.dumps(output, ensure_ascii=False),
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "created_at": utcnow(),
            },
            pk="key",
        )


def store_prompt(ws: Workspace, prompt_hash: str, name: str, version: str, body: dict[str, Any]) -> None:
    """Keep a prompt's text once, keyed by its hash."""
    with ws.lock:
        ws.db.table("prompt_texts").insert(
            {
                "hash": prompt_hash,
                "name": name,
                "version": version,
                "body": json.dumps(body, sort_keys=True, ensure_ascii=False),
                "created_at": utcnow(),
            },
            pk="hash",
            ignore=True,
        )


def record_task(ws: Workspace, run_id: str, task_key: str, prompt: str, passages: list[str], status: str,
                *, error: str = "", candidates: int = 0, rejected: dict[str, int] | None = None) -> None:
    """What became of one task of a run: candidates, rejections, or a failure."""
    with ws.lock:
        ws.db.table("generation_tasks").upsert(
            {
                "run_id": run_id,
                "task_key": task_key,
                "prompt": prompt,
                "passages": json.dumps(passages),
                "status": status,
                "error": error,
                "candidates": candidates,
                "rejected": json.dumps(rejected or {}),
                "at": utcnow(),
            },
            pk=("run_id", "task_key"),
        )


def record_call(ws: Workspace, row: dict[str, Any]) -> None:
    """One HTTP attempt to the model (`model_calls`)."""
    with ws.lock:
        ws.db.table("model_calls").insert(row)


def run_cost(ws: Workspace, run_id: str) -> float:
    """What a run's calls cost, by its call log (USD)."""
    row = ws.db.execute("SELECT COALESCE(SUM(cost), 0) FROM model_calls WHERE run_id = ?", [run_id]).fetchone()
    return float(row[0])


def add_batch(ws: Workspace, row: dict[str, Any]) -> None:
    with ws.lock:
        ws.db.table("batches").insert(row, pk="id")


def update_batch(ws: Workspace, batch_id: str, **fields: str) -> None:
    with ws.lock:
        ws.db.table("batches").update(batch_id, {**fields, "updated_at": utcnow()})


def batch(ws: Workspace, batch_id: str) -> dict[str, Any] | None:
    return next(ws.db.query("SELECT * FROM batches WHERE id = ?", [batch_id]), None)


def batches(ws: Workspace) -> list[dict[str, Any]]:
    """Every submitted batch, oldest first."""
    return list(ws.db.query("SELECT * FROM batches ORDER BY created_at"))
