"""`--batch`: send a run's uncached tasks through the OpenAI Batch API (JSONL upload,
poll, ingest) at the Batch API's price. The batch id and every task's spec are stored in
the `batches` table first, so `--resume-batch ID` continues after an interruption."""

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
    ClientOptions,
    make_client,
    parse_output,
    strict_schema,
)
from curator.generate.prompts import combined_output
from curator.models import Passage, utcnow

if TYPE_CHECKING:
    from curator.generate.pipeline import Failure, Generator
    from curator.generate.tasks import Task
    from curator.workspace import Workspace

BATCH_PRICE_FACTOR = 0.5
_OPEN = ("validating", "in_progress", "finalizing", "cancelling")


def _endpoint(options: ClientOptions) -> str:
    """The batch's endpoint as the provider spells it (Azure's has no /v1)."""
    return "/chat/completions" if options.provider == "azure" else "/v1/chat/completions"


def _request(options: ClientOptions, task: Task) -> dict[str, Any]:
    output = combined_output(task.templates)
    body = {
        "model": options.wire_model,
        "messages": [{"role": "system", "content": task.system}, {"role": "user", "content": task.user}],
        "temperature": options.temperature,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": output.__name__[:64], "schema": strict_schema(output), "strict": True},
        },
    }
    return {"custom_id": task.key, "method": "POST", "url": _endpoint(options), "body": body}


def _spec(task: Task) -> dict[str, Any]:
    return {
        "kind": task.kind,
        "passages": [[p.id, p.revision] for p in task.passages],
        "slices": [t.slice for t in task.templates],
        "relation": task.relation,
    }


def submit(gen: Generator, tasks: list[Task]) -> None:
    """Upload the tasks as one batch, record it, then wait for it (unless `wait=False`)."""
    options = gen._client_options()
    lines = "".join(json.dumps(_request(options, t), ensure_ascii=False) + "\n" for t in tasks)

    async def go() -> tuple[str, str]:
        client = make_client(options)
        try:
            upload = await client.files.create(
                file=(f"{gen.run_id}.jsonl", io.BytesIO(lines.encode("utf-8"))), purpose="batch"
            )
            batch = await client.batches.create(
                # the stubs list only OpenAI's endpoints; Azure's has no /v1
                input_file_id=upload.id, endpoint=_endpoint(options),  # type: ignore[arg-type]
                completion_window="24h",
                metadata={"curator_run": gen.run_id},
            )
            return batch.id, upload.id
        except openai.APIError as exc:
            raise CuratorError(
                f"could not submit the batch to {client.base_url}: {gen.redact(str(exc))}",
                "Set the endpoint with --base-url, [model] base_url or OPENAI_BASE_URL.",
            ) from None
        finally:
            await client.close()

    batch_id, file_id = asyncio.run(go())
    now = utcnow()
    store.add_batch(
        gen.ws,
        {
            "id": batch_id,
            "run_id": gen.run_id,
            "model": gen.model,
            "input_file_id": file_id,
            "status": "submitted",
            "tasks": json.dumps({t.key: _spec(t) for t in tasks}),
            "options": json.dumps({"temperature": gen.params["temperature"],
                                   "slices": gen.slices}),
            "created_at": now,
            "updated_at": now,
        },
    )
    gen.summary.batch_id = batch_id
    gen.summary.batch_status = "submitted"
    if gen.opts.wait:
        resume(gen, batch_id)
    else:
        gen.summary.tasks_not_run += len(tasks)
        gen.summary.stopped = f"batch {batch_id} submitted; collect it with --resume-batch {batch_id}"


def resume(gen: Generator, batch_id: str) -> None:
    """Poll a stored batch until it finishes, then ingest its results once."""
    row = store.batch(gen.ws, batch_id)
    if row is None:
        raise CuratorError(
            f"no batch {batch_id!r} in this workspace",
            "`curator generate --list-batches` lists the batches it submitted.",
        )
    gen.summary.batch_id = batch_id
    if row["ingested_at"]:
        gen.summary.batch_status = "already ingested"
        return
    gen.model = row["model"]
    gen.summary.model = row["model"]
    stored = json.loads(row["options"] or "{}")
    gen.params = {"temperature": stored.get("temperature", gen.params["temperature"])}
    options = gen._client_options()

    async def poll() -> tuple[Any, str, str]:
        client = make_client(options)
        try:
            while True:
                batch = await client.batches.retrieve(batch_id)
                store.update_batch(gen.ws, batch_id, status=batch.status)
                if batch.status not in _OPEN or not gen.opts.wait:
                    break
                await asyncio.sleep(gen.settings.poll_interval)
            out = err = ""
            if batch.output_file_id:
                out = (await client.files.content(batch.output_file_id)).text
            if batch.error_file_id:
                err = (await client.files.content(batch.error_file_id)).text
            return batch, out, err
        except openai.APIError as exc:
            raise CuratorError(
                f"could not read batch {batch_id} from {client.base_url}: {gen.redact(str(exc))}"
            ) from None
        finally:
            await client.close()

    batch, out, err = asyncio.run(poll())
    gen.summary.batch_status = batch.status
    specs: dict[str, dict[str, Any]] = json.loads(row["tasks"])
    if batch.status in _OPEN:
        gen.summary.tasks_not_run += len(specs)
        gen.summary.stopped = f"batch {batch_id} is {batch.status}; run --resume-batch {batch_id} later"
        return
    _ingest(gen, batch_id, specs, out, err)


def _ingest(gen: Generator, batch_id: str, specs: dict[str, dict[str, Any]], out: str, err: str) -> None:
    """Ingest the result files once, then repair the replies that failed validation with
    one live call each, as a live run would have."""
    log = CallLog(gen.ws, gen.run_id, gen.redact)
    seen: set[str] = set()
    invalid: list[tuple[Task, str]] = []
    gen.summary.tasks = len(specs)
    for text in (out, err):
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                custom_id = record["custom_id"]
            except (json.JSONDecodeError, KeyError, TypeError):
                gen.summary.failures.append(_failure(f"batch {batch_id} output line {number}",
                                                     "not a JSON result line"))
                continue
            spec = specs.get(custom_id)
            if spec is None or custom_id in seen:
                continue
            seen.add(custom_id)
            task = _rebuild(gen, spec)
            if task is None or task.key != custom_id:
                gen.summary.tasks_failed += 1
                gen.summary.failures.append(_failure(
                    ",".join(p[0] for p in spec["passages"]),
                    "the passage or prompt changed since the batch was submitted; run again"))
                continue
            reply = _ingest_line(gen, log, batch_id, task, record)
            if reply is not None:
                invalid.append((task, reply))
    for custom_id, spec in specs.items():
        if custom_id not in seen:
            gen.summary.tasks_failed += 1
            gen.summary.failures.append(_failure(",".join(p[0] for p in spec["passages"]),
                                                 f"no result in batch {batch_id}"))
    store.update_batch(gen.ws, batch_id, ingested_at=utcnow())
    if invalid:  # after marking the batch ingested: an interrupted repair is redone by a live run
        gen.repair(invalid)


def _failure(where: str, error: str) -> Failure:
    from curator.generate.pipeline import Failure

    return Failure(task="batch", passages=[where], error=error)


def _ingest_line(gen: Generator, log: CallLog, batch_id: str, task: Task,
                 record: dict[str, Any]) -> str | None:
    """Ingest one result line; returns the reply when it failed validation (to repair)."""
    response = record.get("response") or {}
    status = response.get("status_code")
    body = response.get("body") or {}
    spec = task.spec()
    params = {"model": gen.model, "temperature": gen.params["temperature"], "response_format": "json_schema"}
    usage = body.get("usage") or {}
    pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    cost = gen.prices.cost(pt, ct, BATCH_PRICE_FACTOR)
    gen.summary.calls += 1  # each batch request is billed like a call (at the batch price)
    gen.summary.prompt_tokens += pt
    gen.summary.completion_tokens += ct
    gen.summary.cost += cost
    row = {"attempt": 1, "kind": "batch", "batch_id": batch_id, "status_code": status,
           "prompt_tokens": pt, "completion_tokens": ct, "cost": cost}
    if status != 200:
        message = (record.get("error") or {}).get("message") or f"HTTP {status}"
        log.write(spec, params, **row, outcome="error", error=message)
        gen.fail(task, f"batch request failed: {message}")
        return None
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    if message.get("refusal"):
        log.write(spec, params, **row, outcome="refused", error=message["refusal"])
        gen.fail(task, f"the model refused: {message['refusal']}")
        return None
    reply = message.get("content") or ""
    output, problem = parse_output(reply, spec.output)
    if output is None:
        log.write(spec, params, **row, outcome="invalid", error=problem)
        return reply
    log.write(spec, params, **row, outcome="ok")
    data = output.model_dump()
    gen.cache.put(task.key, model=gen.model, prompt_hash=task.prompt_hash,
                  fingerprints=task.fingerprints, params=gen.params, output=data,
                  prompt_tokens=pt, completion_tokens=ct)
    gen._ingest(task, data, status="ok")
    return None


def _rebuild(gen: Generator, spec: dict[str, Any]) -> Task | None:
    from curator.generate import slices as sl

    passages: list[Passage] = []
    for pid, rev in spec["passages"]:
        p = gen.ws.passage(pid, rev)
        if p is None:
            return None
        passages.append(p)
    missing = [s for s in spec["slices"] if s not in gen.templates]
    if missing:
        return None
    if spec["kind"] == "group":
        group = sl.Group(passages, spec.get("relation", ""))
        return gen.group_task(group, [gen.templates[s] for s in spec["slices"]])
    return gen.passage_task(passages[0], spec["slices"])


def list_batches(ws: Workspace) -> list[dict[str, Any]]:
    return [
        {k: r[k] for k in ("id", "run_id", "model", "status", "created_at", "updated_at", "ingested_at")}
        | {"tasks": len(json.loads(r["tasks"] or "{}"))}
        for r in store.batches(ws)
    ]
