"""`curator score` on 10,000 queries x 100 results against a plain pytrec_eval script.

Whole processes, each reading the same TREC run file (1,000,000 lines):
- curator: `curator score run.trec` (reads the set's cases.jsonl, scores every metric at
  k=10 and k=5, writes the full artefact to runs/);
- the anchor, the plain way a user would do it: `pytrec_eval.parse_qrel`,
  `pytrec_eval.parse_run` over the TREC files, one `RelevanceEvaluator` over recall_5,
  recip_rank and ndcg_cut_10, `evaluate()`, and the three means.
Goal: curator at most 2x the anchor (median of the per-pair ratios of wall times).
The means are printed side by side: nDCG@10 and Recall@5 must agree to 1e-6, and the
anchor's recip_rank (no cut-off) must equal the mean of curator's 1/first_relevant_rank.
"""

from __future__ import annotations

import json
import random
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
GOAL = 2.0

PYTREC = r"""
import json
import sys

import pytrec_eval

with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
results = pytrec_eval.RelevanceEvaluator(qrels, {"recall_5", "recip_rank", "ndcg_cut_10"}).evaluate(run)
names = ("ndcg_cut_10", "recall_5", "recip_rank")
print(json.dumps({name: sum(r[name] for r in results.values()) / len(results) for name in names}))
"""


def generate() -> None:
    """Seeded: every query has 1-4 labelled passages (grade 2 primary, 1 secondary) placed
    at random ranks of a 100-result list, or not returned at all."""
    if RUN.exists() and (WS / "datasets" / "main" / "changelog.jsonl").exists():
        (ROOT / "pytrec.py").write_text(PYTREC)
        return
    from curator.models import Case, ChangeEntry, Relevant

    rng = random.Random(7)
    shutil.rmtree(ROOT, ignore_errors=True)
    (WS / "datasets" / "main").mkdir(parents=True)
    (WS / "runs").mkdir()
    (WS / "curator.toml").write_text('[scoring]\nk = [10, 5]\n')
    with (WS / "datasets" / "main" / "cases.jsonl").open("w") as cases, RUN.open("w") as run, \
            QRELS.open("w") as qrels, (WS / "datasets" / "main" / "changelog.jsonl").open("w") as changelog:
        for i in range(QUERIES):
            qid = f"q{i:05d}"
            labelled = rng.sample(range(DOCS), rng.randint(1, 4))
            relevant = [Relevant(id=f"doc{d}", role="primary" if j == 0 else rng.choice(["primary", "secondary"]))
                        for j, d in enumerate(labelled)]
            case = Case(query_id=qid, query=f"question {i}", slice=rng.choice(["a", "b", "c", "d"]), relevant=relevant)
            cases.write(case.line() + "\n")
            changelog.write(ChangeEntry(query_id=qid, rev=1, action="add", reviewer="bench").line() + "\n")
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


def _clean_runs() -> None:
    for path in (WS / "runs").glob("*.json"):
        path.unlink()


def _check(curator_cmd: list[str], pytrec_cmd: list[str]) -> tuple[dict[str, float], float]:
    """One untimed pass: the two agree on the means; returns them and the artefact's MB."""
    _clean_runs()
    subprocess.run(curator_cmd, check=True, capture_output=True)
    path = next((WS / "runs").glob("*.json"))
    art = json.loads(path.read_text())
    overall = art["metrics"]["overall"]
    ranks = [q["first_relevant_rank"] for q in art["questions"].values()]
    ours = {"ndcg_cut_10": overall["ndcg@10"], "recall_5": overall["recall@5"],
            "recip_rank": sum(1 / r for r in ranks if r) / len(ranks)}
    theirs = json.loads(subprocess.run(pytrec_cmd, check=True, capture_output=True, text=True).stdout)
    for name, value in ours.items():
        print(f"{name}: curator {value:.6f}  pytrec_eval {theirs[name]:.6f}")
        assert abs(value - theirs[name]) < 1e-6, (name, value, theirs[name])
    size = path.stat().st_size / 1e6
    _clean_runs()
    return ours, size


def main() -> None:
    need_shared()
    try:
        import pytrec_eval  # noqa: F401
    except ImportError as exc:
        print(f"skipped: {exc.name} is not installed (pip install -e '.[test,bench]')")
        return
    generate()
    curator_cmd = [str(BIN / "curator"), "-w", str(WS), "score", str(RUN), "--no-gates"]
    pytrec_cmd = [sys.executable, str(ROOT / "pytrec.py"), str(QRELS), str(RUN)]
    means, artefact_mb = _check(curator_cmd, pytrec_cmd)
    peak: dict[str, list[float]] = {"curator": [], "pytrec_eval": []}

    def timed(name: str, cmd: list[str]):
        def run() -> float:
            seconds, rss_kb = time_process(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            peak[name].append(rss_kb / 1024)
            _clean_runs()
            return seconds
        return run

    times = alternate({"curator": timed("curator", curator_cmd), "pytrec_eval": timed("pytrec_eval", pytrec_cmd)},
                      repeat=7, warmup=1)
    ratios = [c / p for c, p in zip(times["curator"], times["pytrec_eval"], strict=True)]
    verdict = "met" if median(ratios) <= GOAL else "missed"
    table = f"""\
{today()}, {machine()}. {QUERIES:,} queries x {DEPTH} results (TREC run, {RUN.stat().st_size / 1e6:.0f} MB),
1-4 graded labels per query; whole processes, one each, 7 alternating pairs after a warm-up;
curator writes its full artefact each time ({artefact_mb:.1f} MB). The means agree to 1e-6:
nDCG@10 {means['ndcg_cut_10']:.4f}, Recall@5 {means['recall_5']:.4f}, recip_rank {means['recip_rank']:.4f}.

| command | median wall s | spread s | peak RSS MB | curator / this (median of pairs, spread) |
|---|---|---|---|---|
| `curator score run.trec` (artefact included) | {median(times['curator']):.2f} | {spread(times['curator'])} | {max(peak['curator']):.0f} | 1.00 |
| plain pytrec_eval script (parse_qrel, parse_run, evaluate) | {median(times['pytrec_eval']):.2f} | {spread(times['pytrec_eval'])} | {max(peak['pytrec_eval']):.0f} | {median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f}) |

Goal: at most {GOAL:g}x the plain pytrec_eval script ({verdict}).
"""
    print(table)
    record("curator score (10k queries x 100 results)", table)


if __name__ == "__main__":
    main()
