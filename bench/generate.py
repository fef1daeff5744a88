"""`curator generate` on 500 passages against an OpenAI-compatible server that takes
200 ms per call (tests/fake_openai.py in its own process).

Corpus: ../shared/corpora/prometheus-runbooks (docs/ and revisions.jsonl). It holds 112
current passages, so it is imported five times under distinct id prefixes (r0/ .. r4/)
to reach 500; the text is the same, the ids (and so the fake model's answers) differ.

Sides, whole processes, alternated after a warm-up, each on a fresh copy of the
workspace (empty cache):
- curator: `curator generate -n 500 --concurrency 8 --json`;
- anchor "ideal": calls x 0.2 s / concurrency (computed from curator's own call count);
- anchor "raw client": a script making the same number of chat calls with the bare
  async openai client and an asyncio semaphore of 8 — the floor for this client.
Then an immediate rerun on the same workspace: its calls should be 0.
Goals: wall <= 1.3x ideal; at most one call per passage for single-passage slices;
rerun makes 0 calls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import DATA, ROOT, alternate, machine, median, need_shared, record, spread, today  # noqa: E402

PASSAGES, COPIES, CONCURRENCY, LATENCY = 500, 5, 8, 0.2
WORK = DATA / "generate"
TEMPLATE = WORK / "template"
BIN = Path(sys.executable).parent

RAW = r"""
import asyncio, sys, openai
async def main(n, url):
    client = openai.AsyncOpenAI(api_key="bench", base_url=url, max_retries=0)
    sem = asyncio.Semaphore(8)
    async def one(i):
        async with sem:
            await client.chat.completions.create(model="gpt-4o-mini", messages=[
                {"role": "user", "content": f'<passage id="p{i}">x</passage>\n\n## Task `paraphrase`\nq'}])
    await asyncio.gather(*(one(i) for i in range(n)))
    await client.close()
asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
"""


def build_template() -> None:
    from curator.corpus import add_paths
    from curator.workspace import Workspace

    src = need_shared("prometheus-runbooks")
    if (TEMPLATE / ".done").exists():
        return
    shutil.rmtree(TEMPLATE, ignore_errors=True)
    ws = Workspace.init(TEMPLATE)
    for i in range(COPIES):
        add_paths(ws, [src / "revisions.jsonl"], prefix=f"r{i}/")
        add_paths(ws, [src / "docs"], prefix=f"r{i}/")
    stats = ws.corpus_stats()
    ws.close()
    (TEMPLATE / ".done").write_text(json.dumps(stats.__dict__))


def fresh_copy(name: str) -> Path:
    target = WORK / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(TEMPLATE, target)
    return target


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CURATOR_", "OPENAI_"))}
    clean["OPENAI_API_KEY"] = "sk-bench-not-a-real-key"
    return clean


def run_generate(ws: Path, url: str) -> tuple[float, dict]:
    cmd = [str(BIN / "curator"), "-w", str(ws), "generate", "-n", str(PASSAGES), "--concurrency",
           str(CONCURRENCY), "--base-url", url, "--json"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env())
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        raise RuntimeError(f"curator generate exited {proc.returncode}: {proc.stderr[-2000:]}")
    return elapsed, json.loads(proc.stdout)


def server_calls(url: str) -> int:
    with urllib.request.urlopen(url + "/stats") as response:
        return json.loads(response.read())["chat_calls"]


def main() -> None:
    need_shared("prometheus-runbooks")
    WORK.mkdir(parents=True, exist_ok=True)
    build_template()
    stats = json.loads((TEMPLATE / ".done").read_text())
    server = subprocess.Popen([sys.executable, "-m", "tests.fake_openai", "--latency", str(LATENCY)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        summaries: list[dict] = []
        counter = [0]

        def curator_side() -> float:
            counter[0] += 1
            elapsed, summary = run_generate(fresh_copy(f"run{counter[0]}"), url)
            summaries.append(summary)
            return elapsed

        def raw_side() -> float:
            n = summaries[-1]["calls"] if summaries else 600
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", RAW, str(n), url], check=True, env=env())
            return time.perf_counter() - start

        times = alternate({"curator": curator_side, "raw": raw_side}, repeat=3, warmup=1)
        last = summaries[-1]
        ws = WORK / f"run{counter[0]}"
        before = server_calls(url)
        rerun_elapsed, rerun = run_generate(ws, url)
        rerun_server_calls = server_calls(url) - before
    finally:
        server.terminate()
        server.wait()

    load = os.getloadavg()
    calls = last["calls"]
    ideal = calls * LATENCY / CONCURRENCY
    cur, raw = times["curator"], times["raw"]
    pairs = [c / r for c, r in zip(cur, raw, strict=True)]
    single_tasks = last["passages_selected"]
    multi = last["tasks"] - single_tasks
    single_calls = calls - multi  # every task made exactly one call unless it retried/repaired
    cands = last["candidates_added"]
    tokens = last["prompt_tokens"] + last["completion_tokens"]
    verdict = lambda ok: "met" if ok else "missed"  # noqa: E731
    table = f"""\
{today()}, {machine()}. Corpus: prometheus-runbooks imported {COPIES}x under distinct id
prefixes ({stats['passages']} current passages, {stats['passages_all']} with history); fake
OpenAI server (tests/fake_openai.py) in its own process, {int(LATENCY * 1000)} ms per call;
`curator generate -n {PASSAGES} --concurrency {CONCURRENCY}`, whole process, fresh workspace
each run; 1 warm-up, then 3 runs alternating with the raw-client anchor. Load average
{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1 / 5 / 15 min) at the end.

| measure | curator | anchor | ratio | goal | verdict |
|---|---|---|---|---|---|
| wall time (s), median (min–max) | {median(cur):.2f} ({spread(cur)}) | ideal {ideal:.2f} ({calls} calls x {LATENCY} s / {CONCURRENCY}) | {median(cur) / ideal:.2f}x | <= 1.3x | {verdict(median(cur) / ideal <= 1.3)} |
| same | | raw async openai client, {calls} calls: {median(raw):.2f} ({spread(raw)}) | {median(pairs):.2f}x (median of pairs) | | |
| model calls per passage, single-passage slices | {single_calls / single_tasks:.2f} ({single_calls} calls / {single_tasks} passages) | | | <= 1 | {verdict(single_calls <= single_tasks)} |
| model calls per candidate | {calls / max(cands, 1):.3f} ({calls} calls / {cands} candidates; {multi} multi-hop groups) | | | | |
| prompt + completion tokens per candidate | {tokens / max(cands, 1):.0f} ({last['prompt_tokens']:,} + {last['completion_tokens']:,}) | | | | |
| calls made by an immediate rerun | {rerun['calls']} (server saw {rerun_server_calls}; {rerun['tasks_cached']} tasks cached; {rerun_elapsed:.2f} s) | | | 0 | {verdict(rerun_server_calls == 0)} |

Candidates per slice (last run): {', '.join(f'{k} {v}' for k, v in sorted(last['by_slice'].items()))}.
Rejected by checks: {sum(last['rejected'].values())}; failures: {len(last['failures'])}.
"""
    print(table)
    record("curator generate (500 passages, 200 ms per call)", table)


if __name__ == "__main__":
    main()
