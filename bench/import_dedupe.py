"""Benchmark: `import-logs --limit 0` into a workspace that already queues 3,000 queries,
before and after checking sampled clusters in batches (issue 3); and (`typos`, issue 23)
typo duplicates and different identifiers constructed into the benchmark log.

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


TYPO_LINES = 300_000  # of the benchmark log, with the constructed queries after them
TYPO_BEFORE = "4abaf9a"  # clusters compared word-sorted forms only; identifiers split by digits alone
# the issue's typos of big clusters: (the big form, its typo)
ISSUE_TYPOS = [
    ("cluster operator degraded how to debug", "cluster operator degraded how to deug"),
    ("cluster operator degraded", "clusteroperator degraded"),
    ("jenkins pipeline stuck in queue", "jenkins pipeline stuck inqueue"),
    ("persistent volume filling up fast", "persistent volume filling up fst"),
]
# different identifiers whose letters are close: each must be queued on its own
IDENTIFIERS = [
    ("etcdGRPCRequestsSlow", "etcdGRPCWriteRequestsSlow"), ("CARRIER-E1042", "CARRIER-E1043"),
    ("KubeAPIErrorBudgetBurn", "KubeAPIErrorBudgetBurnLong"), ("CephOSDDown", "CephOSDNearFull"),
    ("VirtAPIDown", "VirtAPIsDown"), ("etcdNoLeader", "etcdHighNumberOfLeaderChanges"),
]


def _typos(query: str, rng) -> list[str]:
    """Typo forms of a query of two words or more: a word's first letter dropped, two
    words run together, an inner letter dropped, two letters swapped."""
    words = query.split()
    out = []
    at = rng.randrange(len(words))
    if len(words[at]) > 4:
        out.append(" ".join(words[:at] + [words[at][1:]] + words[at + 1:]))
    at = rng.randrange(len(words) - 1)
    out.append(" ".join(words[:at] + [words[at] + words[at + 1]] + words[at + 2:]))
    long = [i for i, w in enumerate(words) if len(w) > 4]
    if long:
        i = rng.choice(long)
        j = rng.randrange(1, len(words[i]) - 1)
        out.append(" ".join(words[:i] + [words[i][:j] + words[i][j + 1:]] + words[i + 1:]))
        j = rng.randrange(1, len(words[i]) - 2)
        w = words[i]
        out.append(" ".join(words[:i] + [w[:j] + w[j + 1] + w[j] + w[j + 2:]] + words[i + 1:]))
    return [t for t in out if t != query]


def typo_log(source: Path, path: Path) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The first TYPO_LINES lines of the benchmark log, then the issue's big queries
    (asked 60-200 times) with their typos, typos of the log's 150 most asked queries of
    three words or more (1-3 times each) and the identifier pairs (5 times each).
    Returns typo -> the query it is a typo of, and the identifier pairs."""
    import random
    from collections import Counter

    rng = random.Random(23)
    counts: Counter[str] = Counter()
    with source.open() as fh, path.open("w") as out:
        for i, line in enumerate(fh):
            if i >= TYPO_LINES:
                break
            out.write(line)
            counts[" ".join(json.loads(line)["query"].lower().split())] += 1
        typos: dict[str, str] = {}
        big = [q for q, _n in counts.most_common() if len(q.split()) >= 3 and "-e" not in q and "@" not in q][:150]
        rows: list[tuple[str, int]] = []
        for q, typo in ISSUE_TYPOS:
            rows += [(q, rng.randint(60, 200)), (typo, 1)]
            typos[typo] = q
        for q in big:
            for typo in _typos(q, rng):
                if typo not in counts and typo not in typos and typo not in big:
                    typos[typo] = q
                    rows.append((typo, rng.randint(1, 3)))
        rows += [(q, 5) for pair in IDENTIFIERS for q in pair]
        for k, (q, n) in enumerate(rows):
            for j in range(n):
                out.write(json.dumps({"timestamp": f"2026-01-0{1 + j % 9}T10:{k % 60:02d}:00Z",
                                      "user_id": f"u-{rng.randint(1, 500)}", "query": q}) + "\n")
    return typos, IDENTIFIERS


def typo_child(tree: str, ws_path: str, log: str, expected: str) -> None:
    """In a fresh process: import curator from `tree`, import the typo log, print how
    many typos were queued on their own and how many identifier pairs were joined."""
    sys.path.insert(0, tree)
    from curator.logs import pipeline
    from curator.workspace import Workspace

    cpu: dict[str, float] = {}
    choose = pipeline._choose

    def timed(*args):
        start = time.process_time()
        out = choose(*args)
        cpu["choose"] = time.process_time() - start
        return out

    pipeline._choose = timed
    ws = Workspace.open(ws_path)
    start = time.process_time()
    summary = pipeline.import_logs(ws, [log], limit=0)
    cpu["import"] = time.process_time() - start
    want = json.loads(Path(expected).read_text())
    queued = {c.norm for c in ws.candidates()}
    shown = {c.query for c in ws.candidates()}
    typos_queued = sorted(t for t in want["typos"] if t in queued)
    joined = [pair for pair in want["identifiers"] if not set(pair) <= shown]
    print(json.dumps({"choose": cpu["choose"], "import": cpu["import"], "queued": summary.queued, "typos": len(want["typos"]),
                      "typos_queued": len(typos_queued), "typos_queued_examples": typos_queued[:5],
                      "identifier_pairs": len(want["identifiers"]), "identifier_pairs_joined": joined}))


def scorer_figures(typos: dict[str, str], pairs: list[tuple[str, str]], queries: list[str]) -> dict[str, dict]:
    """For each candidate scorer at 88: the share of constructed typos that reach their
    query, and how many pairs of different queries (the identifier pairs, and the log's
    distinct queries that share a block: the same digits and first or last five
    characters of the sorted form) it would join."""
    from rapidfuzz import fuzz

    from curator.logs.normalise import compare_key, digit_signature, normalize_query, plain_key

    def sorted_ratio(a: str, b: str) -> float:
        return fuzz.ratio(compare_key(a), compare_key(b))

    def best_of_both(a: str, b: str) -> float:
        return max(sorted_ratio(a, b), fuzz.ratio(plain_key(a), plain_key(b)))

    def wratio(a: str, b: str) -> float:
        return fuzz.WRatio(a, b)

    blocks: dict[str, list[str]] = {}
    for q in queries:
        key = compare_key(q)
        for b in (f"{digit_signature(q)}|^{key[:5]}", f"{digit_signature(q)}|${key[-5:]}"):
            blocks.setdefault(b, []).append(q)
    different = [(a, b) for qs in blocks.values() for i, a in enumerate(qs[:40]) for b in qs[i + 1:40]]
    out = {}
    for name, score in (("ratio of sorted forms (before)", sorted_ratio), ("better of sorted and plain ratios (after)", best_of_both),
                        ("WRatio", wratio)):
        found = sum(score(t, q) >= 88 for t, q in typos.items())
        ident = sum(score(normalize_query(a), normalize_query(b)) >= 88 for a, b in pairs)
        joins = sum(score(a, b) >= 88 for a, b in different)
        out[name] = {"typos_reached": f"{found}/{len(typos)}", "identifier_pairs_joined": f"{ident}/{len(pairs)}",
                     "different_queries_joined": f"{joins}/{len(different)}"}
    return out


def typos_main() -> int:
    """Typo duplicates left queued and identifiers joined, before and after, with the
    clustering stage's CPU time as the anchor ratio."""
    source = Path(os.environ.get("BENCH_LOG", DATA / "search-5000000.jsonl"))
    if not source.exists():
        print(f"skipped: {source} is not here (bench/import_logs.py generates it)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="bench-typos-"))
    try:
        log = work / "typos.jsonl"
        typos, pairs = typo_log(source, log)
        expected = work / "expected.json"
        from curator.logs.normalise import normalize_query

        expected.write_text(json.dumps({"typos": sorted(normalize_query(t) for t in typos), "identifiers": pairs}))
        before = work / "before"
        archive = subprocess.run(["git", "archive", TYPO_BEFORE, "curator"], cwd=ROOT, check=True, capture_output=True)
        before.mkdir()
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        curator = Path(sys.executable).parent / "curator"
        results: dict[str, list[dict]] = {"before": [], "after": []}
        for _round in range(2):
            for name, tree in (("before", before), ("after", ROOT)):
                ws = work / f"ws-{name}-{_round}"
                subprocess.run([str(curator), "init", str(ws)], check=True, capture_output=True)
                out = subprocess.run([sys.executable, __file__, "typo-child", str(tree), str(ws), str(log), str(expected)],
                                     check=True, capture_output=True, text=True)
                results[name].append(json.loads(out.stdout))
        with log.open() as fh:
            queries = list({" ".join(json.loads(line)["query"].lower().split()) for line in fh})
        figures = scorer_figures(typos, pairs, queries)
    finally:
        shutil.rmtree(work)
    b, a = results["before"][-1], results["after"][-1]
    ratio = median([x["choose"] / y["choose"] for x, y in zip(results["after"], results["before"], strict=True)])
    whole = median([x["import"] / y["import"] for x, y in zip(results["after"], results["before"], strict=True)])
    lines = [
        f"{today()}, {machine()}; the benchmark log's first {TYPO_LINES:,} lines plus {b['typos']} constructed typos "
        f"of its most asked queries and the issue's, and {len(pairs)} pairs of different identifiers; "
        "`import-logs --limit 0` into a new workspace; before = " + TYPO_BEFORE + "; 2 runs each, alternated.",
        "",
        "| | before | after |",
        "|---|---|---|",
        f"| typos queued as their own candidate | {b['typos_queued']} / {b['typos']} | {a['typos_queued']} / {a['typos']} |",
        f"| identifier pairs joined | {len(b['identifier_pairs_joined'])} / {len(pairs)} | "
        f"{len(a['identifier_pairs_joined'])} / {len(pairs)} |",
        f"| candidates queued | {b['queued']:,} | {a['queued']:,} |",
        f"| choose stage CPU s (cluster + dedupe + sample) | {b['choose']:.2f} | {a['choose']:.2f} ({ratio:.2f}x) |",
        f"| whole import CPU s | {b['import']:.2f} | {a['import']:.2f} ({whole:.2f}x) |",
        "",
        "Scorers at similarity 88 (pairs of different queries: the log's distinct queries sharing a block):",
        "",
        "| scorer | typos reached | identifier pairs at 88 or more (before the identifier rule) | different queries joined |",
        "|---|---|---|---|",
    ]
    for name, f in figures.items():
        lines.append(f"| {name} | {f['typos_reached']} | {f['identifier_pairs_joined']} | {f['different_queries_joined']} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if a["typos_queued_examples"] or a["identifier_pairs_joined"]:
        print("left:", a["typos_queued_examples"], a["identifier_pairs_joined"])
    record("import-logs typo duplicates and identifiers (issue 23)", table)
    return 0 if not a["identifier_pairs_joined"] else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(*sys.argv[2:5])
    elif sys.argv[1:2] == ["typo-child"]:
        typo_child(*sys.argv[2:6])
    elif sys.argv[1:2] == ["typos"]:
        sys.exit(typos_main())
    else:
        sys.exit(main())
