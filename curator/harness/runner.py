"""Drive an adapter over a set's active cases on one asyncio loop and write a JSONL run.

Concurrency is `--concurrency` worker tasks on that loop (default 1, so each latency is
the retriever's alone). Each request gets `retries` more tries after a failure; a request
that still fails is written with `error` and empty results (docs/scoring.md: scored as a
failed request, never as an empty result). Warm-up requests go first and are not written.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curator.harness.adapters import Adapter, RequestFailed, now_iso
from curator.models import Case

# progress(done, total, latencies so far in ms)
RunProgress = Callable[[int, int, list[float]], None]


@dataclass
class RunOutcome:
    path: Path
    total: int
    done: int = 0
    failed: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0


def percentile(values: list[float], p: float) -> float | None:
    """Nearest rank, as the scorer's latency gates."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


async def _one(adapter: Adapter, case: Case, k: int, retries: int) -> dict[str, Any]:
    record: dict[str, Any] = {"query_id": case.query_id, "timestamp": now_iso()}
    error = ""
    for _attempt in range(retries + 1):
        await adapter.ready(case.query, k)
        start = time.perf_counter()
        try:
            hits = await adapter.search(case.query, k)
        except RequestFailed as exc:
            error = str(exc)
            continue
        latency = (time.perf_counter() - start) * 1000
        results = []
        for ident, score, revision in hits[:k]:
            item: dict[str, Any] = {"id": ident}
            if score is not None:
                item["score"] = score
            if revision is not None:
                item["revision"] = revision
            results.append(item)
        record.update(results=results, latency_ms=round(latency, 3))
        if not results:
            record["empty"] = True
        return record
    record.update(results=[], error=error or "failed")
    return record


async def _drive(adapter: Adapter, cases: list[Case], k: int, concurrency: int, retries: int, warmup: int,
                 records: dict[str, dict[str, Any]], outcome: RunOutcome, progress: RunProgress | None) -> None:
    await adapter.start()
    try:
        for case in cases[:warmup]:
            with contextlib.suppress(RequestFailed):
                await adapter.search(case.query, k)
        queue = list(reversed(cases))

        async def worker() -> None:
            while queue:
                case = queue.pop()
                record = await _one(adapter, case, k, retries)
                records[case.query_id] = record
                outcome.done += 1
                if "error" in record:
                    outcome.failed.append(case.query_id)
                else:
                    outcome.latencies.append(record["latency_ms"])
                if progress is not None:
                    progress(outcome.done, outcome.total, outcome.latencies)

        await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    finally:
        await adapter.close()


def run_retriever(adapter: Adapter, cases: list[Case], out: str | Path, *, k: int = 20, concurrency: int = 1,
                  retries: int = 1, warmup: int = 0, progress: RunProgress | None = None) -> RunOutcome:
    """Query `adapter` for each case and write the JSONL run to `out` (in case order).
    On Ctrl-C the answered queries are written and `interrupted` is set."""
    path = Path(out)
    outcome = RunOutcome(path, len(cases))
    records: dict[str, dict[str, Any]] = {}
    start = time.perf_counter()
    try:
        asyncio.run(_drive(adapter, cases, k, concurrency, retries, warmup, records, outcome, progress))
    except KeyboardInterrupt:
        outcome.interrupted = True
    outcome.wall_s = time.perf_counter() - start
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for case in cases:
            record = records.get(case.query_id)
            if record is not None:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)
    return outcome
