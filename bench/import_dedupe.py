"""Benchmark: `import-logs --limit 0` into a workspace that already queues 3,000 queries,
before and after checking sampled clusters in batches (issue 3).

The workspace gets the top 3,000 clusters of the generated 5M-line log's first 1M lines
(`--until`); then the whole log is imported again with no budget (`--force --dry-run`).
Each run is a child process that imports curator either from this tree or from the
commit before the change (`git archive`), and reports the CPU seconds of the two stages
that grew with the queue (choosing, building candidates) and a hash of the summary and
every candidate. Goal: the same hash, and both stages faster.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, ROOT, SHARED, alternate, machine, median, record, spread, today  # noqa: E402

BEFORE = "520a734"  # the last commit with one extractOne per cluster and variant
UNTIL = "2025-12-09T10:40:00Z"  # the first 1,000,000 lines (one every 6 s from 2025-10-01)
QUEUED = 3000


def child(tree: str, ws_path: str, log: str) -> None:
    """In a fresh process: import curator from `tree`, run the import, print the figures."""
    sys.path.insert(0, tree)
    from curator.logs import pipeline
    from curator.workspace import Workspace

    cpu: dict[str, float] = {}
    made: dict[str, list] = {}

    def timed(name: str, stage):
        def run(*args):
            start = time.process_time()  # all threads: cdist's workers included
            out = stage(*args)
            cpu[name] = time.process_time() - start
            made[name] = out
            return out
        return run

    pipeline._choose = timed("choose", pipeline._choose)
    made_by = "_candidates" if hasattr(pipeline, "_candidates") else "candidates"  # before / after issue 18
    setattr(pipeline, made_by, timed("candidates", getattr(pipeline, made_by)))
    summary = pipeline.import_logs(Workspace.open(ws_path), [log], limit=0, dry_run=True, force=True).to_dict()
    candidates = [c.model_dump(mode="json") for c in made["candidates"]]
    for c in candidates:  # a cluster shows at most 100 users since 0346618 (before: up to 200)
        if c["provenance"].get("users_at_least"):
            c["provenance"]["users"] = 100
    digest = hashlib.sha256(json.dumps([summary, candidates], sort_keys=True).encode()).hexdigest()
    print(json.dumps({**cpu, "sha256": digest, "queued": len(candidates), "duplicates": summary["duplicates"]}))


def main() -> int:
    if not SHARED.exists():
        print(f"skipped: {SHARED} is not here (benchmarks run on a dev machine)")
        return 0
    log = DATA / "search-5000000.jsonl"
    if not log.exists():
        print(f"skipped: {log} is not here (bench/import_logs.py generates it)")
        return 0
    ws = DATA / "dedupe-ws"
    if not ws.exists():
        curator = Path(sys.executable).parent / "curator"
        subprocess.run([str(curator), "init", str(ws)], check=True, capture_output=True)
        subprocess.run([str(curator), "-w", str(ws), "import-logs", str(log), "--until", UNTIL,
                        "--limit", str(QUEUED)], check=True, capture_output=True)
    before = Path(tempfile.mkdtemp(prefix="bench-dedupe-"))
    archive = subprocess.run(["git", "archive", BEFORE, "curator"], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)

    results: dict[str, list[dict]] = {"before": [], "after": []}

    def side(name: str, tree: Path):
        def run() -> float:
            out = subprocess.run([sys.executable, __file__, "child", str(tree), str(ws), str(log)],
                                 check=True, capture_output=True, text=True)
            results[name].append(json.loads(out.stdout))
            return results[name][-1]["choose"]
        return run

    load = os.getloadavg()[0]
    try:
        alternate({"before": side("before", before), "after": side("after", ROOT)}, repeat=3)
    finally:
        shutil.rmtree(before)
    runs = {name: rs[1:] for name, rs in results.items()}  # without the warm-up
    hashes = {r["sha256"] for rs in results.values() for r in rs}
    rows = ["| stage (CPU s) | before: median | spread | after: median | spread | after / before |", "|---|---|---|---|---|---|"]
    for stage in ("choose", "candidates"):
        b, a = ([r[stage] for r in runs[name]] for name in ("before", "after"))
        ratio = median([x / y for x, y in zip(a, b, strict=True)])
        rows.append(f"| {stage} | {median(b):.2f} | {spread(b)} | {median(a):.2f} | {spread(a)} | {ratio:.2f}x |")
    last = results["after"][-1]
    table = (
        f"{today()}, {machine()}; the generated 5M-line log imported with `--limit 0 --force --dry-run` into a "
        f"workspace holding its first 1M lines' top {QUEUED:,} clusters; before = {BEFORE}, 3 runs each after a "
        "warm-up, alternated, each a fresh process; CPU seconds of the stage (all threads); load average "
        f"{load:.2f} at the start.\n\n"
        + "\n".join(rows)
        + f"\n\n- same output (sha256 of the summary and every candidate): **{'yes' if len(hashes) == 1 else 'NO'}**"
        f" ({last['queued']:,} candidates, duplicates {last['duplicates']})\n"
    )
    print(table)
    record("import-logs --limit 0 over an existing queue (issue 3)", table)
    return 0 if len(hashes) == 1 else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(*sys.argv[2:5])
    else:
        sys.exit(main())
