"""The generation cache: validated model output keyed on (model, prompt hash, passage
fingerprints, parameters). A task whose key is cached costs nothing to run again, so
an interrupted run resumes where it stopped."""

from __future__ import annotations

import json
from typing import Any

from curator.models import utcnow
from curator.text import sha256_hex


def cache_key(model: str, prompt_hash: str, fingerprints: list[str], params: dict[str, Any]) -> str:
    body = json.dumps(
        {"model": model, "prompt": prompt_hash, "passages": fingerprints, "params": params},
        sort_keys=True,
    )
    return sha256_hex(body)[:32]


class GenerationCache:
    def __init__(self, ws: Any):
        self.ws = ws

    def get(self, key: str) -> dict[str, Any] | None:
        row = self.ws.db.execute(
            "SELECT output FROM generation_cache WHERE key = ?", [key]
        ).fetchone()
        return json.loads(row[0]) if row else None

    def keys(self, keys: list[str]) -> set[str]:
        found: set[str] = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self.ws.db.execute(
                    f"SELECT key FROM generation_cache WHERE key IN ({marks})", chunk
                )
            )
        return found

    def put(
        self,
        key: str,
        *,
        model: str,
        prompt_hash: str,
        fingerprints: list[str],
        params: dict[str, Any],
        output: dict[str, Any],
        prompt_tokens: int,
        completion_tokens: int,
    ) -> None:
        with self.ws.lock:
            self.ws.db["generation_cache"].upsert(
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


def store_prompt(ws: Any, prompt_hash: str, name: str, version: str, body: dict[str, Any]) -> None:
    """Keep a prompt's text once, keyed by its hash."""
    with ws.lock:
        if ws.db.execute("SELECT 1 FROM prompt_texts WHERE hash = ?", [prompt_hash]).fetchone():
            return
        ws.db["prompt_texts"].insert(
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
