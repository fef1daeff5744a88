"""`curator score` on 10,000 queries x 100 results: nDCG@10, Recall@5, MRR@10.

Whole processes, each reading the same TREC run file (1,000,000 lines):
- curator: `curator score run.trec` (reads the set's cases.jsonl, scores every metric at
  k=10 and k=5, writes the full artefact to runs/);
- pytrec_eval: a script that reads the TREC qrels and run in Python and evaluates
  ndcg_cut_10, recall_5 and recip_rank on the run cut at 10 (MRR@10);
- ranx: a script with `Qrels.from_file`, `Run.from_file` and `evaluate(...)`; every
  process is ranx's first call in that process (numba compiles or loads its cache).
Goal: curator no slower than pytrec_eval, and faster than ranx's first call (wall time
of whole processes). curator reads a file this big in two processes, so CPU seconds
(user + system, children included) are reported beside the wall times, with the load
average before and after. The means of the three are printed side by side, so a
mismatch shows.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    DATA,
    alternate,
    machine,
    median,
    need_shared,
    record,
    spread,
    time_process,
    today,
)

QUERIES, DEPTH, DOCS = 10_000, 100, 200_000
ROOT = DATA / "score"
WS = ROOT / "ws"
RUN = ROOT / "run.trec"
QRELS = ROOT / "qrels.trec"
BIN = Path(sys.executable).parent

PYTREC = r"""
import sys, json, pytrec_eval
qrels, run = {}, {}
for line in open(sys.argv[1]):
    q, _, d, g = line.split()
    qrels.setdefault(q, {})[d] = int(g)
for line in open(sys.argv[2]):
    q, _, d, _, s, _ = line.split()
    run.setdefault(q, {})[d] = float(s)
full = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.5"}).evaluate(run)
top = {q: dict(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True)[:10]) for q, docs in run.items()}
rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top)
n = len(qrels)
print(json.dumps({"ndcg@10": sum(v["ndcg_cut_10"] for v in full.values()) / n,
                  "recall@5": sum(v["recall_5"] for v in full.values()) / n,
                  "mrr@10": sum(v["recip_rank"] for v in rr.values()) / n}))
"""

RANX = r"""
import sys, json
from ranx import Qrels, Run, evaluate
qrels = Qrels.from_file(sys.argv[1], kind="trec")
run = Run.from_file(sys.argv[2], kind="trec")
print(json.dumps(evaluate(qrels, run, ["ndcg@10", "recall@5", "mrr@10"])))
"""


def generate() -> None:
    """Seeded: every query has 1-4 labelled passages (grade 2 primary, 1 secondary) placed
    at random ranks of a 100-result list, or not returned at all."""
    if RUN.exists() and (WS / "datasets" / "main" / "cases.jsonl").exists():
        return
    from curator.models import Case, Relevant

    rng = random.Random(7)
    shutil.rmtree(ROOT, ignore_errors=True)
    (WS / "datasets" / "main").mkdir(parents=True)
    (WS / "runs").mkdir()
    (WS / "curator.toml").write_text('[scoring]\nk = [10, 5]\n')
    with (WS / "datasets" / "main" / "cases.jsonl").open("w") as cases, RUN.open("w") as run, \
            QRELS.open("w") as qrels:
        for i in range(QUERIES):
            qid = f"q{i:05d}"
            labelled = rng.sample(range(DOCS), rng.randint(1, 4))
            relevant = [Relevant(id=f"doc{d}", role="primary" if j == 0 else rng.choice(["primary", "secondary"]))
                        for j, d in enumerate(labelled)]
            case = Case(query_id=qid, query=f"question {i}", slice=rng.choice(["a", "b", "c", "d"]), relevant=relevant)
            cases.write(case.line() + "\n")
            for r in relevant:
                qrels.write(f"{qid} 0 {r.id} {r.grade}\n")
            docs = rng.sample(range(DOCS), DEPTH)
            for r in relevant:  # most labelled passages near the top, some deep, some absent
                if rng.random() < 0.8:
                    docs[min(DEPTH - 1, int(rng.expovariate(1 / 6)))] = int(r.id[3:])
            seen, ranked = set(), []
            for d in docs:
                if d not in seen:
                    seen.add(d)
                    ranked.append(d)
            run.write("".join(f"{qid} Q0 doc{d} {rank} {100 - rank + 0.5:.1f} bench\n"
                              for rank, d in enumerate(ranked, 1)))
    (ROOT / "pytrec.py").write_text(PYTREC)
    (ROOT / "ranx_eval.py").write_text(RANX)


def _clean_runs() -> None:
    for path in (WS / "runs").glob("*.json"):
        path.unlink()


def main() -> None:
    need_shared()
    try:
        import pytrec_eval  # noqa: F401
        import ranx  # noqa: F401
    except ImportError as exc:
        print(f"skipped: {exc.name} is not installed (pip install -e '.[test,bench]')")
        return
    generate()
    curator_cmd = [str(BIN / "curator"), "-w", str(WS), "score", str(RUN), "--no-gates"]
    pytrec_cmd = [sys.executable, str(ROOT / "pytrec.py"), str(QRELS), str(RUN)]
    ranx_cmd = [sys.executable, str(ROOT / "ranx_eval.py"), str(QRELS), str(RUN)]
    load_before = os.getloadavg()[0]

    # One correctness pass: the three must agree on the means.
    subprocess.run(curator_cmd + ["--json"], check=True, capture_output=True)
    art = json.loads(next((WS / "runs").glob("*.json")).read_text())
    ours = {m: art["metrics"]["overall"][m] for m in ("ndcg@10", "recall@5", "mrr@10")}
    theirs = json.loads(subprocess.run(pytrec_cmd, check=True, capture_output=True, text=True).stdout)
    ranx_means = json.loads(subprocess.run(ranx_cmd, check=True, capture_output=True, text=True).stdout)
    artefact_mb = next((WS / "runs").glob("*.json")).stat().st_size / 1e6
    _clean_runs()
    for name in ours:
        print(f"{name}: curator {ours[name]:.6f}  pytrec_eval {theirs[name]:.6f}  ranx {ranx_means[name]:.6f}")

    cpu: dict[str, list[float]] = {"curator": [], "pytrec_eval": [], "ranx": []}

    def timed(name, cmd):
        def run() -> float:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            seconds, _ = time_process(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            _clean_runs()
            return seconds
        return run

    times = alternate({"curator": timed("curator", curator_cmd), "pytrec_eval": timed("pytrec_eval", pytrec_cmd),
                       "ranx": timed("ranx", ranx_cmd)}, repeat=5, warmup=1)
    load_after = os.getloadavg()[0]
    med = {name: median(values) for name, values in times.items()}
    cpu_med = {name: median(values[1:]) for name, values in cpu.items()}  # values[0]: the warm-up
    pair_pytrec = [c / p for c, p in zip(times["curator"], times["pytrec_eval"], strict=True)]
    pair_ranx = [c / r for c, r in zip(times["curator"], times["ranx"], strict=True)]
    verdict_p = "met" if median(pair_pytrec) <= 1.0 else "missed"
    verdict_r = "met" if median(pair_ranx) < 1.0 else "missed"
    table = f"""\
{today()}, {machine()}. {QUERIES:,} queries x {DEPTH} results (TREC run, {RUN.stat().st_size / 1e6:.0f} MB),
1-4 graded labels per query; whole processes, 5 alternating runs after a warm-up; curator
writes its full artefact each time ({artefact_mb:.1f} MB). Load average {load_before:.2f} before,
{load_after:.2f} after (2 cores shared with other work: wall times are noisy). Means agree to 1e-6:
nDCG@10 {ours['ndcg@10']:.4f}, Recall@5 {ours['recall@5']:.4f}, MRR@10 {ours['mrr@10']:.4f}.

curator reads a run file this big in two processes (a forked worker reads and scores the
second half while the first process reads the question set, then the first half);
pytrec_eval's script and ranx use one core. The goal compares whole-process wall time,
so the wall ratio is the verdict; CPU seconds (user + system, both processes) show the cost.

| command | median wall s | spread s | median CPU s | curator / this, wall (median of pairs) |
|---|---|---|---|---|
| `curator score run.trec` (artefact included) | {med['curator']:.2f} | {spread(times['curator'])} | {cpu_med['curator']:.2f} | 1.00 |
| pytrec_eval script (parse + evaluate) | {med['pytrec_eval']:.2f} | {spread(times['pytrec_eval'])} | {cpu_med['pytrec_eval']:.2f} | {median(pair_pytrec):.2f} |
| ranx script (first call in a process) | {med['ranx']:.2f} | {spread(times['ranx'])} | {cpu_med['ranx']:.2f} | {median(pair_ranx):.2f} |

Goal: no slower than pytrec_eval ({verdict_p}); faster than ranx's first call ({verdict_r}).
"""
    print(table)
    for name in ours:
        assert abs(ours[name] - theirs[name]) < 1e-6, (name, ours[name], theirs[name])
    record("curator score (10k queries x 100 results)", table)


if __name__ == "__main__":
    main()
