"""`generate(ws, **options)`: candidate questions for every slice, queued for review.

1. select passages (stratified across documents, skipping covered ones, seeded);
2. build tasks: one call per passage for every single-passage slice (exact_identifier,
   paraphrase, negative, and freshness when the passage has an older revision), plus one
   call per multi-hop group;
3. serve cached tasks from the cache, send the rest to the model (or the Batch API);
4. check each question against its slice's rules, de-duplicate, queue the survivors.

Every task ends with candidates, rejections, or a recorded failure (`generation_tasks`).
"""

from __future__ import annotations

import asyncio
import json
import math
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from curator.config import GenerateConfig
from curator.errors import CuratorError
from curator.generate import batch, store
from curator.generate import identifiers as idents
from curator.generate import slices as sl
from curator.generate.candidates import Failure, GenerateSummary, Intake
from curator.generate.client import (
    Budget,
    CallLog,
    CallResult,
    ClientOptions,
    ModelClient,
    Prices,
    Redactor,
    is_reasoning_model,
)
from curator.generate.prompts import PromptTemplate, load_templates
from curator.generate.store import store_prompt
from curator.generate.tasks import Task, TaskMaker, corpus_topics
from curator.models import Passage, utcnow, validation_problems

if TYPE_CHECKING:
    from curator.workspace import Workspace

# Options that default to the workspace's `[generate]` section: GenerateOptions has a
# field of the same name for each.
CONFIGURABLE = tuple(GenerateConfig.model_fields)


@dataclass
class GenerateOptions:
    passages: int | None = None
    slices: list[str] | None = None
    seed: int = 0
    backend: str = "model"  # model | identifiers
    model: str | None = None
    base_url: str | None = None
    concurrency: int | None = None
    timeout: float | None = None
    max_retries: int | None = None
    temperature: float | None = None
    response_format: str = "auto"
    max_calls: int | None = None
    max_cost: float | None = None
    dry_run: bool = False
    batch: bool = False
    resume_batch: str | None = None
    wait: bool = True
    poll_interval: float | None = None
    multi_hop_ratio: float | None = None  # multi-hop groups per selected passage
    group_size: int | None = None
    min_words: int | None = None
    paraphrase_max_overlap: float | None = None
    negative_max_coverage: float | None = None
    duplicate_similarity: float | None = None
    only: list[str] | None = None  # restrict selection to these passage ids
    progress: Callable[[int, int], None] = lambda done, total: None


def generate(ws: Workspace, **options: Any) -> GenerateSummary:
    """Generate candidate questions from the workspace's corpus and queue them for review.

    Options (all keyword) are the fields of `GenerateOptions` (the flags of `curator
    generate`, docs/generate.md); those left out (or None) take the workspace's
    `[generate]` / `[model]` configuration.

    Example:
        >>> from curator import Workspace
        >>> from curator.generate import generate
        >>> summary = generate(Workspace.find(), passages=50, seed=1)
        >>> summary.candidates_added, summary.calls
    """
    opts = GenerateOptions(**options)
    return Generator(ws, opts).run()


class Generator:
    def __init__(self, ws: Workspace, opts: GenerateOptions):
        self.ws = ws
        self.opts = opts
        cfg = ws.config.model
        self.model = opts.model or cfg.name
        if opts.backend not in ("model", "identifiers"):
            raise CuratorError(f"unknown backend {opts.backend!r}", "Use `model` or `identifiers`.")
        self.settings = _settings(ws.config.generate, opts)
        self.run_id = datetime.now(UTC).strftime("gen-%Y%m%dT%H%M%SZ-") + secrets.token_hex(3)
        self.summary = GenerateSummary(
            run_id=self.run_id,
            backend=opts.backend,
            model=self.model if opts.backend == "model" else idents.BACKEND_NAME,
        )
        self.redact = Redactor(ws.config.api_key())
        price = cfg.prices.get(self.model, {})
        self.prices = Prices(price.get("input"), price.get("output"))
        self.params = _cache_params(opts.temperature if opts.temperature is not None else cfg.temperature,
                                    cfg.extra_body)
        self.templates: dict[str, PromptTemplate] = {}
        self.intake = Intake(ws, self.settings, self.run_id, self.summary, self.redact)
        self._topics: str | None = None

    def maker(self) -> TaskMaker:
        """Renders this run's tasks (a batch resume sets the model and parameters first)."""
        if self._topics is None:
            self._topics = corpus_topics(self.ws)
        return TaskMaker(self.ws, self.model, self.params, self._topics)

    # ---- the run ---------------------------------------------------------------------

    def run(self) -> GenerateSummary:
        start = time.perf_counter()
        try:
            if self.opts.resume_batch:
                self._load_prompts()
                self._resume_batch(self.opts.resume_batch)
            elif self.opts.backend == "identifiers":
                self._run_identifiers()
            else:
                self._run_model()
        finally:
            self.summary.elapsed = time.perf_counter() - start
        return self.summary

    def _load_prompts(self) -> None:
        templates = load_templates(self.ws.prompts_dir)
        configured = list(self.ws.config.slices)
        wanted = self.settings.slices or [s for s in configured if s in templates]
        unknown = [s for s in wanted if s not in templates]
        if unknown:
            raise CuratorError(
                f"no prompt template for slice(s) {', '.join(unknown)}",
                f"Templates exist for: {', '.join(sorted(templates))}. Add prompts/<slice>.toml "
                "to the workspace (see docs/generate.md).",
            )
        self.templates = {s: templates[s] for s in wanted}
        for t in self.templates.values():
            store_prompt(self.ws, t.hash, t.name, t.version, t.model_dump())

    def _run_model(self) -> None:
        self._load_prompts()
        if self.opts.max_cost is not None and not self.prices.known:
            raise CuratorError(
                f"--max-cost needs a price for model {self.model!r}",
                f'Add it to curator.toml: [model.prices."{self.model}"] input = ..., output = ... '
                "(USD per million tokens).",
            )
        tasks = self._plan()
        self.summary.tasks = len(tasks)
        cached = store.cached(self.ws, [t.key for t in tasks])
        todo = [t for t in tasks if t.key not in cached]
        if self.opts.dry_run:
            self._estimate(todo, len(tasks) - len(todo))
            return
        if todo:
            self._check_can_send()
        done = 0
        for task in tasks:
            if task.key in cached:
                self.summary.tasks_cached += 1
                self.intake.ingest(task, cached[task.key], status="cached")
                done += 1
                self.opts.progress(done, len(tasks))
        if not todo:
            return
        if self.opts.batch:
            self._submit_batch(todo)
            return
        asyncio.run(self._send(todo, done, len(tasks)))

    async def _send(self, todo: list[Task], done: int, total: int, replies: dict[str, str] | None = None) -> None:
        """Send `todo` to the model, within the budget left; `replies`: task key -> an
        invalid answer to repair (only the repair call is sent)."""
        budget = Budget(max_calls=self.opts.max_calls, max_cost=self.opts.max_cost,
                        calls=self.summary.calls, cost=self.summary.cost)
        replies = replies or {}
        # One worker thread owns the database while requests are in flight: call-log
        # rows, cache writes, checks and queueing all run there, in order, so the event
        # loop never waits on SQLite or rapidfuzz.
        ingester = ThreadPoolExecutor(max_workers=1, thread_name_prefix="curator-ingest")
        client = ModelClient(
            self._client_options(),
            log=CallLog(self.ws, self.run_id, self.redact, executor=ingester),
            budget=budget,
            prices=self.prices,
            concurrency=self.opts.concurrency or self.ws.config.model.concurrency,
        )
        counter = [done]
        loop = asyncio.get_running_loop()

        def finish(task: Task, result: CallResult) -> None:
            self._finish(task, result)
            counter[0] += 1
            self.opts.progress(counter[0], total)

        async def one(task: Task) -> None:
            result = await client.run(task, replies.get(task.key))
            await loop.run_in_executor(ingester, finish, task, result)

        try:
            await asyncio.gather(*(one(t) for t in todo))
        finally:
            ingester.shutdown(wait=True)
            await client.close()
        self.summary.stopped = budget.stopped
        if budget.stopped and budget.max_cost is not None and budget.refused:
            spent = store.run_cost(self.ws, self.run_id)
            self.summary.stopped = (f"--max-cost {budget.max_cost:g} reached: ${spent:.4f} spent by the call "
                                    f"log, and the next call could cost up to ${budget.refused:.4f}")

    def _check_can_send(self) -> None:
        """Before the first request: somewhere to send it, and parameters the model takes."""
        options = self._client_options()
        if options.provider == "openai" and options.api_key is None and not options.base_url:
            raise CuratorError(
                f"no API key and no server: {self.ws.config.api_key_env} is not set and no base URL is configured",
                f"Set {self.ws.config.api_key_env} for OpenAI, or point at a local server with --base-url, "
                "[model] base_url or OPENAI_BASE_URL (vLLM, Ollama and llama.cpp need no key). "
                "`--backend identifiers` generates offline.",
            )
        if options.temperature is not None and is_reasoning_model(options.model):
            raise CuratorError(
                f"model {options.model!r} is a reasoning model, which refuses a temperature "
                f"(temperature = {options.temperature:g} is set)",
                "Remove `temperature` from [model] in curator.toml (and --temperature): unset, it is not sent.",
            )

    def _finish(self, task: Task, result: CallResult) -> None:
        """A live or batch call's result: cached and ingested, not run, or failed."""
        self._count(result)
        if result.output is not None:
            output = self.redact.deep(result.output.model_dump())  # a server may echo the key
            store.cache_put(
                self.ws,
                task.key,
                model=self.model,
                prompt_hash=task.prompt_hash,
                fingerprints=task.fingerprints,
                params=self.params,
                output=output,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
            )
            self.intake.ingest(task, output, status="ok")
        elif result.outcome == "budget":
            self.summary.tasks_not_run += 1
            self.intake.record(task, "not_run", error=result.error)
        else:
            self.intake.fail(task, result.error or result.outcome)

    def _count(self, result: CallResult) -> None:
        self.summary.calls += result.calls
        self.summary.prompt_tokens += result.prompt_tokens
        self.summary.completion_tokens += result.completion_tokens
        self.summary.cost += result.cost

    # ---- the Batch API -------------------------------------------------------------------

    def _submit_batch(self, todo: list[Task]) -> None:
        settings = {"temperature": self.params.get("temperature"), "slices": list(self.templates)}
        batch_id = batch.submit(self.ws, self._client_options(), self.run_id, todo, settings, self.redact)
        self.summary.batch_id, self.summary.batch_status = batch_id, "submitted"
        if self.opts.wait:
            self._resume_batch(batch_id)
        else:
            self.summary.tasks_not_run += len(todo)
            self.summary.stopped = f"batch {batch_id} submitted; collect it with --resume-batch {batch_id}"

    def _resume_batch(self, batch_id: str) -> None:
        """Poll a stored batch until it finishes, then ingest its results once; the replies
        that failed validation get one live repair call each, as a live run would have."""
        row = store.batch(self.ws, batch_id)
        if row is None:
            raise CuratorError(
                f"no batch {batch_id!r} in this workspace",
                "`curator generate --list-batches` lists the batches it submitted.",
            )
        self.summary.batch_id = batch_id
        if row["ingested_at"]:
            self.summary.batch_status = "already ingested"
            return
        self.model = self.summary.model = row["model"]
        stored = json.loads(row["options"] or "{}")
        self.params = _cache_params(stored.get("temperature", self.params.get("temperature")),
                                    self.ws.config.model.extra_body)
        options = self._client_options()
        status, out, err = batch.poll(self.ws, options, batch_id, wait=self.opts.wait,
                                      interval=self.settings.poll_interval, redact=self.redact)
        self.summary.batch_status = status
        specs: dict[str, dict[str, Any]] = json.loads(row["tasks"])
        if status in batch.OPEN:
            self.summary.tasks_not_run += len(specs)
            self.summary.stopped = f"batch {batch_id} is {status}; run --resume-batch {batch_id} later"
            return
        records, unreadable = batch.results(batch_id, specs, out, err)
        self.summary.failures += [Failure("batch", [where], "not a JSON result line") for where in unreadable]
        self.summary.tasks = len(specs)
        log = CallLog(self.ws, self.run_id, self.redact)
        invalid: list[tuple[Task, str]] = []
        for custom_id, spec in specs.items():
            task = self._rebuild(spec) if custom_id in records else None
            if task is None or task.key != custom_id:
                self.summary.tasks_failed += 1
                error = (f"no result in batch {batch_id}" if custom_id not in records else
                         "the passage or prompt changed since the batch was submitted; run again")
                self.summary.failures.append(Failure("batch", [",".join(p[0] for p in spec["passages"])], error))
                continue
            result, reply = batch.call_result(records[custom_id], task, log, options, self.prices, batch_id)
            if reply is None:
                self._finish(task, result)
            else:
                self._count(result)
                invalid.append((task, reply))
        store.update_batch(self.ws, batch_id, ingested_at=utcnow())
        if invalid:  # after marking the batch ingested: an interrupted repair is redone by a live run
            tasks = [task for task, _ in invalid]
            asyncio.run(self._send(tasks, 0, len(tasks), {t.key: r for t, r in invalid}))

    def _rebuild(self, spec: dict[str, Any]) -> Task | None:
        """A submitted task rendered again (None when a passage or template is gone)."""
        passages: list[Passage] = []
        for pid, rev in spec["passages"]:
            p = self.ws.passage(pid, rev)
            if p is None:
                return None
            passages.append(p)
        if any(s not in self.templates for s in spec["slices"]):
            return None
        templates = [self.templates[s] for s in spec["slices"]]
        if spec["kind"] == "group":
            return self.maker().group_task(sl.Group(passages, spec.get("relation", "")), templates)
        return self.maker().passage_task(passages[0], templates)

    def _client_options(self) -> ClientOptions:
        cfg = self.ws.config.model
        o = self.opts
        return ClientOptions(
            model=self.model,
            base_url=o.base_url or self.ws.config.resolved_base_url(),
            api_key=self.ws.config.api_key(),
            provider=cfg.provider,
            azure_endpoint=cfg.azure_endpoint,
            api_version=cfg.api_version,
            deployment=cfg.deployment,
            timeout=o.timeout if o.timeout is not None else cfg.timeout,
            max_retries=o.max_retries if o.max_retries is not None else cfg.max_retries,
            temperature=self.params.get("temperature"),
            response_format=o.response_format,
            max_tokens=cfg.max_tokens,
            token_param=cfg.token_param,
            extra_body=cfg.extra_body,
            extra_headers=cfg.extra_headers,
        )

    def _estimate(self, todo: list[Task], cached: int) -> None:
        prompt = sum(t.estimate_tokens[0] for t in todo)
        completion = sum(t.estimate_tokens[1] for t in todo)
        factor = batch.BATCH_PRICE_FACTOR if self.opts.batch else 1.0
        self.summary.dry_run = True
        self.summary.estimate = {
            "calls": len(todo),
            "cached_tasks": cached,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "cost": self.prices.cost(prompt, completion, factor) if self.prices.known else None,
            "price_known": self.prices.known,
            "batch": self.opts.batch,
            "note": "tokens estimated at 4 characters per token; calls exclude retries and repairs",
        }

    # ---- planning ----------------------------------------------------------------------

    def _plan(self) -> list[Task]:
        single = [t for t in self.templates.values() if t.input in ("passage", "revisions")]
        multi = [t for t in self.templates.values() if t.input == "group"]
        memo: dict[str, Task | None] = {}
        maker = self.maker()

        def passage_task(p: Passage) -> Task | None:
            if p.id not in memo:
                memo[p.id] = maker.passage_task(p, single) if single else None
            return memo[p.id]

        def reusable(p: Passage) -> bool:
            task = passage_task(p)
            return task is not None and bool(store.cached(self.ws, [task.key]))

        selected = self._select(reusable)
        tasks = [t for p in selected if (t := passage_task(p)) is not None]
        if multi and selected:
            count = math.ceil(len(selected) * self.settings.multi_hop_ratio)
            size = self.settings.group_size
            for group in sl.build_groups(self.ws, selected, count, size, self.opts.seed):
                tasks.append(maker.group_task(group, multi))
        return tasks

    def _select(self, reusable: Callable[[Passage], bool]) -> list[Passage]:
        selected, skipped = sl.select_passages(
            self.ws, self.settings.passages, self.opts.seed, min_words=self.settings.min_words,
            reusable=reusable, only=set(self.opts.only) if self.opts.only else None,
        )
        self.summary.passages_selected = len(selected)
        self.summary.passages_skipped_covered = skipped
        return selected

    # ---- the offline identifiers backend --------------------------------------------------

    def _run_identifiers(self) -> None:
        selected = self._select(lambda _p: False)
        self.summary.tasks = len(selected)
        items, rejected = idents.questions(self.ws, selected, self.opts.seed, self.run_id, self.opts.progress)
        self.intake.queue(items, rejected)
        self.summary.rejected = dict(rejected)


def _cache_params(temperature: float | None, extra_body: dict[str, Any]) -> dict[str, Any]:
    """The request parameters a cache key covers (only those set, so keys made before a
    parameter existed stay valid)."""
    params: dict[str, Any] = {}
    if temperature is not None:
        params["temperature"] = temperature
    if extra_body:
        params["extra_body"] = extra_body
    return params


def _settings(config: GenerateConfig, opts: GenerateOptions) -> GenerateConfig:
    """The `[generate]` section with the options given for this run laid over it."""
    given = {name: getattr(opts, name) for name in CONFIGURABLE if getattr(opts, name) is not None}
    try:
        return GenerateConfig.model_validate({**config.model_dump(), **given})
    except ValidationError as exc:
        raise CuratorError(f"invalid generate option: {validation_problems(exc)}") from None
