"""`--batch`: send a run's uncached tasks through the OpenAI Batch API (JSONL upload,
poll, read the result files) at the Batch API's price. The batch id and every task's spec
are stored in the `batches` table first, so `--resume-batch ID` continues after an
interruption. Everything here takes its inputs as arguments and returns data: the
pipeline turns the results into candidates, as it does a live call's."""

from __future__ import annotations

import asyncio
import io
import json
from typing import TYPE_CHECKING, Any

import openai

from curator.errors import CuratorError
from curator.generate import store
from curator.generate.client import (
    CallLog,
    CallResult,
    ClientOptions,
    Prices,
    Redactor,
    log_params,
    make_client,
    parse_output,
    request_body,
)
from curator.models import utcnow

if TYPE_CHECKING:
    from curator.generate.tasks import Task
    from curator.workspace import Workspace

BATCH_PRICE_FACTOR = 0.5
OPEN = ("validating", "in_progress", "finalizing", "cancelling")


def _endpoint(options: ClientOptions) -> str:
    """The batch's endpoint as the provider spells it (Azure's has no /v1)."""
    return "/chat/completions" if options.provider == "azure" else "/v1/chat/completions"


def _request(options: ClientOptions, task: Task) -> dict[str, Any]:
    messages = [{"role": "system", "content": task.system}, {"role": "user", "content": task.user}]
    return {"custom_id": task.key, "method": "POST", "url": _endpoint(options),
            "body": request_body(options, task, messages)}


def _spec(task: Task) -> dict[str, Any]:
    return {
        "kind": task.kind,
        "passages": [[p.id, p.revision] for p in task.passages],
        "slices": [t.slice for t in task.templates],
        "relation": task.relation,
    }


def submit(ws: Workspace, options: ClientOptions, run_id: str, tasks: list[Task],
           settings: dict[str, Any], redact: Redactor) -> str:
    """Upload the tasks as one batch and record it with `settings` (what a resume needs to
    render the same tasks again); returns the batch id."""
    lines = "".join(json.dumps(_request(options, t), ensure_ascii=False) + "\n" for t in tasks)

    async def go() -> tuple[str, str]:
        client = make_client(options)
        try:
            upload = await client.files.create(
                file=(f"{run_id}.jsonl", io.BytesIO(lines.encode("utf-8"))), purpose="batch"
            )
            batch = await client.batches.create(
                # the stubs list only OpenAI's endpoints; Azure's has no /v1
                input_file_id=upload.id, endpoint=_endpoint(options),  # type: ignore[arg-type]
                completion_window="24h",
                metadata={"curator_run": run_id},
            )
            return batch.id, upload.id
        except openai.APIError as exc:
            raise CuratorError(
                f"could not submit the batch to {client.base_url}: {redact(str(exc))}",
                "Set the endpoint with --base-url, [model] base_url or OPENAI_BASE_URL.",
            ) from None
        finally:
            await client.close()

    batch_id, file_id = asyncio.run(go())
    now = utcnow()
    store.add_batch(ws, {
        "id": batch_id,
        "run_id": run_id,
        "model": options.model,
        "input_file_id": file_id,
        "status": "submitted",
        "tasks": json.dumps({t.key: _spec(t) for t in tasks}),
        "options": json.dumps(settings),
        "created_at": now,
        "updated_at": now,
    })
    return batch_id


def poll(ws: Workspace, options: ClientOptions, batch_id: str, *, wait: bool, interval: float,
         redact: Redactor) -> tuple[str, str, str]:
    """Poll a stored batch until it finishes (once, without `wait`): (status, the output
    file's text, the error file's text)."""

    async def go() -> tuple[str, str, str]:
        client = make_client(options)
        try:
            while True:
                batch = await client.batches.retrieve(batch_id)
                store.update_batch(ws, batch_id, status=batch.status)
                if batch.status not in OPEN or not wait:
                    break
                await asyncio.sleep(interval)
            out = err = ""
            if batch.output_file_id:
                out = (await client.files.content(batch.output_file_id)).text
            if batch.error_file_id:
                err = (await client.files.content(batch.error_file_id)).text
            return batch.status, out, err
        except openai.APIError as exc:
            raise CuratorError(
                f"could not read batch {batch_id} from {client.base_url}: {redact(str(exc))}"
            ) from None
        finally:
            await client.close()

    return asyncio.run(go())


def results(batch_id: str, specs: dict[str, Any], out: str, err: str) -> tuple[dict[str, Any], list[str]]:
    """The first result record of each submitted task, and where a line was unreadable."""
    records: dict[str, Any] = {}
    unreadable: list[str] = []
    for text in (out, err):
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                custom_id = record["custom_id"]
            except (json.JSONDecodeError, KeyError, TypeError):
                unreadable.append(f"batch {batch_id} output line {number}")
                continue
            if custom_id in specs:
                records.setdefault(custom_id, record)
    return records, unreadable


def call_result(record: dict[str, Any], task: Task, log: CallLog, options: ClientOptions,
                prices: Prices, batch_id: str) -> tuple[CallResult, str | None]:
    """One result line as a logged call, like a live one; with the reply when it failed
    validation (the pipeline repairs it with one live call)."""
    response = record.get("response") or {}
    status = response.get("status_code")
    body = response.get("body") or {}
    usage = body.get("usage") or {}
    pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    # each batch request is billed like a call (at the batch price)
    result = CallResult(prompt_tokens=pt, completion_tokens=ct, calls=1,
                        cost=prices.cost(pt, ct, BATCH_PRICE_FACTOR))
    params = log_params(options, "json_schema")
    row = {"attempt": 1, "kind": "batch", "batch_id": batch_id, "status_code": status,
           "prompt_tokens": pt, "completion_tokens": ct, "cost": result.cost}
    if status != 200:
        message = (record.get("error") or {}).get("message") or f"HTTP {status}"
        log.write(task, params, **row, outcome="error", error=message)
        result.outcome, result.error = "error", f"batch request failed: {message}"
        return result, None
    message = ((body.get("choices") or [{}])[0]).get("message") or {}
    if message.get("refusal"):
        log.write(task, params, **row, outcome="refused", error=message["refusal"])
        result.outcome, result.error = "refused", f"the model refused: {message['refusal']}"
        return result, None
    reply = message.get("content") or ""
    output, problem = parse_output(reply, task.output)
    if output is None:
        log.write(task, params, **row, outcome="invalid", error=problem)
        return result, reply
    log.write(task, params, **row, outcome="ok")
    result.output = output
    return result, None


def list_batches(ws: Workspace) -> list[dict[str, Any]]:
    return [
        {k: r[k] for k in ("id", "run_id", "model", "status", "created_at", "updated_at", "ingested_at")}
        | {"tasks": len(json.loads(r["tasks"] or "{}"))}
        for r in store.batches(ws)
    ]
