"""Triage at 10,000 cases with 6 stored runs of 10,000 queries x 100 results.

- rescore: `curator score --rescore latest --no-write` (rankings from the run file, and
  rebuilt from the artefact when the run file is gone) beside two anchors on the same run:
  `curator score RUN --no-write` (scoring it in the first place) and pytrec-eval-terrier
  (read the qrels and the run, evaluate ndcg_cut_10, recall_10, recip_rank) as processes.
  Goal: rescoring costs no more than scoring the run (ratio <= 1.0).
- the app in a real pty (as bench/review_latency.py measures the review app): startup to
  the first card's question, and a cause key (3: synonym gap, an `edit` rev appended and
  fsynced plus the decision row) to the next card's question; anchor: a trivial Textual
  app measured the same way in the same run. Goals: startup <= 1.5 s, key p95 <= 50 ms.

Inputs are generated with a seeded generator into bench/.data/triage-ws (once).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    DATA,
    alternate,
    machine,
    median,
    need_shared,
    percentile,
    record,
    spread,
    time_process,
    today,
)
from bench.review_latency import TRIVIAL_APP, Pty, startup, trivial_keys  # noqa: E402

CASES = 10_000
RUNS = 6
RESULTS = 100
DECISIONS = 60
STARTS = 5
THINK = 0.4
WS = DATA / "triage-ws"
STAMP = f"{CASES}-{RUNS}-{RESULTS}-v1"
CURATOR = str(Path(sys.executable).parent / "curator")
SLICES = ["exact_identifier"] * 3 + ["paraphrase"] * 3 + ["multi_hop"] * 2 + ["negative"]

PYTREC = '''
import sys, orjson, pytrec_eval
cases, run = sys.argv[1], sys.argv[2]
qrels = {}
for line in open(cases, "rb"):
    c = orjson.loads(line)
    if c["relevant"]:
        qrels[c["query_id"]] = {r["id"]: 2 if r["role"] == "primary" else 1 for r in c["relevant"]}
ranked = {}
for line in open(run, "rb"):
    r = orjson.loads(line)
    if r["query_id"] in qrels:
        ranked[r["query_id"]] = {x["id"]: x["score"] for x in r["results"]} or {"none": 0.0}
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_10", "recip_rank"})
res = ev.evaluate(ranked)
print(sum(v["ndcg_cut_10"] for v in res.values()) / len(res))
'''


def generate() -> None:
    if (WS / ".stamp").exists() and (WS / ".stamp").read_text() == STAMP:
        return
    from curator import score
    from curator.workspace import Workspace

    print(f"generating {CASES:,} cases and {RUNS} runs into {WS} (once)")
    shutil.rmtree(WS, ignore_errors=True)
    ws = Workspace.init(WS)
    folder = WS / "datasets" / "main"
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(8)
    cases = []
    with (folder / "cases.jsonl").open("w") as c, (folder / "changelog.jsonl").open("w") as log:
        for i in range(CASES):
            s = rng.choice(SLICES)
            rel = []
            if s != "negative":
                rel.append({"id": f"doc-{rng.randrange(200_000)}", "role": "primary"})
                if s != "exact_identifier":
                    role = "primary" if s == "multi_hop" else "secondary"
                    rel.append({"id": f"doc-{rng.randrange(200_000)}", "role": role})
            case = {"query_id": f"q{i:05d}", "rev": 1, "query": f"T{i:05d} question", "slice": s,
                    "status": "active", "relevant": rel, "require_all": s == "multi_hop",
                    "expect_empty": s == "negative", "source": {"kind": "log"}, "tags": [],
                    "reviewer": "bench", "at": "2026-11-01T00:00:00Z"}
            cases.append(case)
            c.write(json.dumps(case) + "\n")
            log.write(json.dumps({"at": case["at"], "query_id": case["query_id"], "rev": 1, "action": "add",
                                  "reason": "", "reviewer": "bench", "versions": {}}) + "\n")
    runs = WS / "retriever-runs"
    runs.mkdir()
    for k in range(RUNS):
        r = random.Random(100 + k)
        path = runs / f"run{k}.jsonl"
        with path.open("w") as fh:
            for case in cases:
                ids = [f"doc-{r.randrange(200_000)}" for _ in range(RESULTS)]
                for label in case["relevant"]:
                    if r.random() < 0.75:
                        ids[min(int(r.expovariate(0.3)), RESULTS - 1)] = label["id"]
                if case["slice"] == "negative" and r.random() < 0.5:
                    ids = []
                results = [{"id": d, "score": round(100 - j * 0.5, 2)} for j, d in enumerate(ids)]
                fh.write(json.dumps({"query_id": case["query_id"], "results": results,
                                     "latency_ms": round(r.uniform(5, 80), 1)}) + "\n")
        score(ws.question_set(), path, k=10, workspace=ws, write=True, label=f"r{k}", gates=[])
    ws.close()
    for name in ("cases.jsonl", "changelog.jsonl"):
        shutil.copy2(folder / name, DATA / f"triage-{name}")
    (WS / ".stamp").write_text(STAMP)


def reset() -> None:
    """Undo the previous bench run's decisions: the set's files as generated, no decisions."""
    folder = WS / "datasets" / "main"
    for name in ("cases.jsonl", "changelog.jsonl"):
        shutil.copy2(DATA / f"triage-{name}", folder / name)
    db = sqlite3.connect(WS / ".curator" / "workspace.db")
    with db:
        db.execute("DELETE FROM triage_decisions")
    db.close()
    for path in (WS / "runs").glob("*rescore*"):
        path.unlink()


def queue_tokens() -> list[str]:
    from curator.triage import TriageSession
    from curator.workspace import Workspace

    with Workspace.open(WS) as ws:
        session = TriageSession(ws, earlier=False)
        return [i.case.query.split()[0] for i in session.queue]


def rescore_figures() -> tuple[dict[str, list[float]], list[int]]:
    run = WS / "retriever-runs" / f"run{RUNS - 1}.jsonl"
    away = run.with_suffix(".away")
    anchor = DATA / "pytrec_anchor.py"
    anchor.write_text(PYTREC)
    rss: list[int] = []

    def proc(cmd: list[str]) -> float:
        elapsed, peak = time_process(cmd, cwd=WS, stdout=open("/dev/null", "w"))  # noqa: SIM115
        rss.append(peak)
        return elapsed

    def artefact_mode() -> float:
        run.rename(away)
        try:
            return proc([CURATOR, "score", "--rescore", "latest", "--no-write"])
        finally:
            away.rename(run)

    return alternate({
        "rescore (run file)": lambda: proc([CURATOR, "score", "--rescore", "latest", "--no-write"]),
        "rescore (from artefact)": artefact_mode,
        "curator score RUN": lambda: proc([CURATOR, "score", str(run), "--no-write", "--no-gates", "--k", "10"]),
        "pytrec_eval": lambda: proc([sys.executable, str(anchor), str(WS / "datasets/main/cases.jsonl"), str(run)]),
    }, repeat=3), rss


def decisions(tokens: list[str]) -> list[float]:
    proc = Pty([CURATOR, "triage"], WS)
    proc.wait_for(tokens[0], timeout=60)
    times = []
    for nxt in tokens[1:DECISIONS + 1]:
        time.sleep(THINK)
        sent = proc.send("3")
        times.append(proc.wait_for(nxt) - sent)
    proc.quit()
    return times


def main() -> None:
    need_shared()  # the convention: benchmarks run where ../shared is (inputs here are generated)
    generate()
    reset()
    if "--app-only" in sys.argv:  # while tuning the app: skip the rescore timings, record nothing
        timings, rss = {}, [0]
    else:
        timings, rss = rescore_figures()
    tokens = queue_tokens()
    trivial = DATA / "trivial_app.py"
    trivial.write_text(TRIVIAL_APP, encoding="utf-8")
    starts: dict[str, list[float]] = {"triage": [], "trivial": []}
    startup([CURATOR, "triage"], WS, tokens[0], timeout=60)
    startup([sys.executable, str(trivial)], trivial.parent, "ANCHOR-00000")
    for _ in range(STARTS):
        starts["triage"].append(startup([CURATOR, "triage"], WS, tokens[0], timeout=60))
        starts["trivial"].append(startup([sys.executable, str(trivial)], trivial.parent, "ANCHOR-00000"))
    anchor_keys = trivial_keys(trivial, DECISIONS // 2, THINK)
    keys = decisions(tokens)
    anchor_keys += trivial_keys(trivial, DECISIONS // 2, THINK)
    reset()

    if not timings:
        print("startup", median(starts["triage"]), "keys p50/p95 ms", percentile(keys, 50) * 1000,
              percentile(keys, 95) * 1000, "anchor", median(starts["trivial"]), percentile(anchor_keys, 95) * 1000)
        return
    score_med = median(timings["curator score RUN"])
    pytrec_med = median(timings["pytrec_eval"])
    rows = [
        "| measure | curator | anchor | ratio | goal | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("rescore (run file)", "rescore (from artefact)"):
        med = median(timings[name])
        ratio = median([a / b for a, b in zip(timings[name], timings["curator score RUN"], strict=True)])
        vs_pytrec = median([a / b for a, b in zip(timings[name], timings["pytrec_eval"], strict=True)])
        rows.append(f"| `score --rescore latest`, {name.split('(')[1][:-1]} (s) | {med:.2f} ({spread(timings[name])}) | "
                    f"`curator score RUN` {score_med:.2f} ({spread(timings['curator score RUN'])}) | {ratio:.2f}x | "
                    f"<= 1.0x | {'pass' if ratio <= 1.0 else 'FAIL'} |")
        rows.append(f"| same (s) | {med:.2f} | pytrec-eval-terrier process {pytrec_med:.2f} "
                    f"({spread(timings['pytrec_eval'])}) | {vs_pytrec:.2f}x | – | informational |")
    s_med = median(starts["triage"])
    ratios = [a / b for a, b in zip(starts["triage"], starts["trivial"], strict=True)]
    rows.append(f"| `curator triage` startup to first card, median of {STARTS} (s) | {s_med:.3f} "
                f"({spread(starts['triage'])}) | trivial Textual app {median(starts['trivial']):.3f} | "
                f"{median(ratios):.1f}x | <= 1.5 s | {'pass' if s_med <= 1.5 else 'FAIL'} |")
    p50, p95 = percentile(keys, 50) * 1000, percentile(keys, 95) * 1000
    a50, a95 = percentile(anchor_keys, 50) * 1000, percentile(anchor_keys, 95) * 1000
    rows.append(f"| cause key to next card p50 over {len(keys)} decisions (ms) | {p50:.1f} | {a50:.1f} | "
                f"{p50 / a50:.0f}x | – | – |")
    rows.append(f"| cause key to next card p95 (ms) | {p95:.1f} | {a95:.1f} | {p95 / a95:.0f}x | <= 50 ms | "
                f"{'pass' if p95 <= 50 else 'FAIL'} |")
    table = "\n".join(rows)
    note = (f"{today()} · {machine()} · {CASES:,} cases, {RUNS} stored runs of {CASES:,} queries x {RESULTS} "
            f"results (seeded, bench/.data) · processes timed whole, alternating, 1 warm-up + 3 each · "
            f"peak RSS of the children up to {max(rss) / 1024:.0f} MB · app in a real pty 120x40, "
            f"{THINK} s between a card and its key; each key appends and fsyncs an `edit` rev and records "
            f"the decision before the next card shows · ratios are medians of pairwise ratios · "
            f"load average {os.getloadavg()[0]:.1f} at the end.")
    print(table)
    print(note)
    record("Triage (bench/triage.py)", f"{note}\n\n{table}")


if __name__ == "__main__":
    main()
