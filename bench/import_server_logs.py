"""Benchmark: `curator import-logs` on the logs a web server, a load balancer or a search
engine writes (no JSON: the python readers), beside the plain way a user pulls search
terms out of them, measured in the same run on the same file:
`grep -oE '[?& {]q=[^& "}]*' LOG | LC_ALL=C sort | uniq -c`.

Shapes, each seeded (bench/log_shapes.py's Zipf queries, a line every two seconds on
average, several lines a second at peaks):
  access  nginx combined: 70% searches, the rest pages and assets, 1% bots
  elb     AWS ALB lines with the full URL
  w3c     IIS W3C extended lines under their #Fields directive
  solr    Solr's request lines, each search once per shard beside it (two shards)
  json    nginx's JSON access log (an ingress controller's `escape=json` format)
No goal was set for these shapes; the table gives µs a line and the ratio to grep.
Environment: BENCH_SERVER_LOG_LINES (default 1000000), BENCH_REPEAT (default 3),
BENCH_SERVER_SHAPES (default all: access,elb,w3c,solr,json).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote_plus

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, SHARED, alternate, machine, median, record, time_process, today  # noqa: E402
from log_shapes import SEED, _head, _zipf_draws  # noqa: E402

BIN = Path(sys.executable).parent
LINES = int(os.environ.get("BENCH_SERVER_LOG_LINES", 1_000_000))
REPEAT = int(os.environ.get("BENCH_REPEAT", 3))
SHAPES = ("access", "elb", "w3c", "solr", "json")
WANTED = [s for s in os.environ.get("BENCH_SERVER_SHAPES", ",".join(SHAPES)).split(",") if s in SHAPES]
GREP = r"""grep -oE '[?& {]q=[^& "}]*' '%s' | LC_ALL=C sort | uniq -c > /dev/null"""
_T0 = 1759276800  # 2025-10-01T00:00:00Z
AGENTS = ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1",
          "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148"]
BOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def generate(shape: str, lines: int, path: Path) -> None:
    rng = np.random.default_rng([SEED, 100 + SHAPES.index(shape)])
    head = _head(rng)
    picks = _zipf_draws(rng, len(head), lines)
    search = rng.random(lines) < 0.7
    bots = rng.random(lines) < 0.01
    clients = rng.integers(1, 60_000, size=lines)
    gaps = rng.exponential(2.0, size=lines).cumsum().astype(np.int64)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        if shape == "w3c":
            fh.write("#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n"
                     "#Date: 2025-10-01 00:00:00\n#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port "
                     "cs-username c-ip cs(User-Agent) cs(Referer) sc-status sc-substatus sc-win32-status time-taken\n")
        out = []
        for i in range(lines):
            t = _T0 + int(gaps[i])
            q = quote_plus(head[picks[i]])
            agent = BOT if bots[i] else AGENTS[i % 3]
            ip = f"198.51.{clients[i] // 250 % 256}.{clients[i] % 250}"
            path_q = f"/search?q={q}&page={1 + i % 3}" if search[i] else f"/docs/page-{i % 5000}.html"
            if shape == "access":
                stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))
                out.append(f'{ip} - - [{stamp}] "GET {path_q} HTTP/1.1" 200 {512 + i % 9000} '
                           f'"https://docs.example.com/" "{agent}"')
            elif shape == "elb":
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{i % 1000000:06d}Z"
                out.append(f'https {stamp} app/docs-lb/50dc6c495c0c9188 {ip}:{40000 + i % 20000} 10.0.0.1:80 0.001 '
                           f'0.048 0.000 200 200 34 {512 + i % 9000} "GET https://docs.example.com:443{path_q} '
                           f'HTTP/1.1" "{agent}" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:'
                           f'eu-west-1:123456789012:targetgroup/docs/73e2d6bc24d8a067 "Root=1-{i:08x}" '
                           f'"docs.example.com" "-" 1 {stamp} "forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_{i:x}')
            elif shape == "w3c":
                day, clock = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)).split(" ")
                stem, _, query = path_q.partition("?")
                out.append(f"{day} {clock} 10.0.0.1 GET {stem} {query or '-'} 443 - {ip} "
                           f"{agent.replace(' ', '+')} - 200 0 0 {5 + i % 400}")
            elif shape == "json":
                stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))
                out.append(json.dumps({"time_local": stamp, "remote_addr": ip, "remote_user": "",
                                       "request": f"GET {path_q} HTTP/1.1", "status": 200,
                                       "body_bytes_sent": 512 + i % 9000, "http_referer": "https://docs.example.com/",
                                       "http_user_agent": agent, "request_time": round(0.001 * (i % 900), 3)}))
            else:
                stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f".{i % 1000:03d}"
                prefix = f"{stamp} INFO  (qtp1234-{i % 200}) [c:docs s:shard1 r:core_node2 x:docs_shard1_replica_n1] "
                if not search[i]:
                    out.append(prefix + f"o.a.s.c.S.Request webapp=/solr path=/select params={{q=*:*&fq=type:page"
                                        f"&rows=10}} hits={1000 + i % 50} status=0 QTime=1")
                    continue
                for shard in (1, 2):
                    out.append(prefix.replace("shard1", f"shard{shard}") + "o.a.s.c.S.Request webapp=/solr "
                               f"path=/select params={{df=text&distrib=false&q={q}&isShard=true&wt=javabin}} "
                               f"hits={i % 40} status=0 QTime={1 + i % 9}")
                out.append(prefix + f"o.a.s.c.S.Request webapp=/solr path=/select params={{q={q}&defType=edismax"
                                    f"&rows=10}} hits={i % 40} status=0 QTime={2 + i % 30}")
            if len(out) >= 50_000:
                fh.write("\n".join(out) + "\n")
                out = []
        if out:
            fh.write("\n".join(out) + "\n")
    tmp.replace(path)


def log_file(shape: str, lines: int) -> Path:
    path = DATA / f"server-{shape}-{lines}.{'jsonl' if shape == 'json' else 'log'}"
    if not path.exists():
        print(f"generating {path.name} ...", flush=True)
        # in a child: Linux keeps a process's peak RSS across fork and exec, so a big
        # parent would inflate every timed child's figure
        subprocess.run([sys.executable, __file__, "--generate", shape, str(lines), str(path)], check=True)
    return path


def main() -> int:
    if not SHARED.exists():
        print(f"skipped: {SHARED} is not here (benchmarks run on a dev machine)")
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-server-logs-"))
    rows = ["| shape | lines | MB | format read | searches counted | curator s | grep anchor s | curator ÷ grep "
            "| µs a line | peak RSS MB |", "|---|---|---|---|---|---|---|---|---|---|"]
    try:
        for shape in WANTED:
            log = log_file(shape, LINES)
            rss: list[int] = []
            summary: dict = {}

            def curator(log: Path = log, rss: list[int] = rss, summary: dict = summary) -> float:
                ws = work / f"ws-{len(rss)}"
                subprocess.run([str(BIN / "curator"), "init", str(ws)], check=True, capture_output=True)
                with (ws / "summary.json").open("w") as fh:
                    seconds, peak = time_process([str(BIN / "curator"), "-w", str(ws), "import-logs", str(log),
                                                  "--dry-run", "--json"], ok=(0, 3), stdout=fh)
                summary.update(json.loads((ws / "summary.json").read_text()))
                rss.append(peak)
                shutil.rmtree(ws)
                return seconds

            def grep(log: Path = log) -> float:
                return time_process(["sh", "-c", GREP % log])[0]

            times = alternate({"curator": curator, "grep": grep}, repeat=REPEAT, warmup=0)
            ratio = median([c / g for c, g in zip(times["curator"], times["grep"], strict=True)])
            lines = summary["lines"]
            fmt = summary["files"][0]["format"]
            rows.append(f"| {shape} | {lines:,} | {log.stat().st_size / 1e6:,.0f} | {fmt} | {summary['parsed']:,} "
                        f"| {median(times['curator']):.2f} | {median(times['grep']):.2f} | {ratio:.2f}x "
                        f"| {median(times['curator']) / lines * 1e6:.1f} | {max(rss) / 1024:.0f} |")
            print(rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = (f"{today()}, {machine()}; generated logs (bench/import_server_logs.py, seed {SEED}); {REPEAT} run(s) "
             "of each side, alternated; curator is the whole `import-logs --dry-run --json` process (reading, "
             "redaction, clustering); the anchor only cuts `q=...` out of the lines and counts them.\n\n"
             + "\n".join(rows))
    print(table)
    record("import-logs on server logs (access, ALB, IIS, Solr)", table)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--generate"]:
        generate(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
        sys.exit(0)
    sys.exit(main())
