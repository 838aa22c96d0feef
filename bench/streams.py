"""Many browser streams: through Pushpin (the edge, docs/scaling.md) and direct.

For each N: N concurrent run streams (``/api/runs/<id>/events/``, a reviewer's token)
spread over R dev runs that a Celery worker paused, opened all at once, then timestamped
CUSTOM events published on the runs' channels with ``publish()`` (the worker's publish
function, from this process) while every stream is open. Printed per variant and N:

- time to open all N (first connect → the last ``stream-open``);
- RSS of Pushpin (its runner and services together), RSS and threads of each web process,
  with all open (and before: the web line at N = 0);
- Postgres connections of the web processes (their own application_name);
- event latency p50 / p99: ``publish()`` → the client has the event, over every stream;
- REST p50: ``GET /api/runs/<id>/`` (through Pushpin for the edge), 100 sequential
  requests, with the N streams open.

Variants: ``edge`` = Pushpin + two web processes (GRIP_URL) + the edge forwarder;
``direct`` = one web process holding its streams (today's default), up to what it
survives (``--direct-max``). The client (this process) shares the 2 CPUs with everything
measured; the load average is printed before and after each N.

Streams open in waves of ``--wave`` (the next wave once the last one is answered, or
after 2 s), as browsers arrive; a stream refused (Pushpin's 502) is counted, not retried.

Its database is BENCH_DATABASE (default agentsite_bench): give it a name of its own when
another bench may run at the same time (each drops and makes its database anew).

Usage: python bench/streams.py [--edge 100,1000,10000] [--direct 100,1000,2000]
       [--runs 100] [--events 5] [--wave 250]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import secrets
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
import psycopg  # noqa: E402
from ag_ui.core import CustomEvent  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Permission  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.authtoken.models import Token  # noqa: E402

from agentsite.processes import (  # noqa: E402
    Process,
    children_of,
    edge_process,
    free_port,
    grip_url,
    healthy,
    pushpin_config,
    pushpin_process,
    web_argv,
    worker_process,
)
from bench._services import load, percentile, proc_stat  # noqa: E402
from streams.publish import publish  # noqa: E402
from tests.edge.sse_many import Stream  # noqa: E402

APP = f"agentsite-bench-streams-{os.getpid()}"
QUEUE = f"bench-streams-{os.getpid()}"


def rss_mb(pid: int) -> float:
    return int(proc_stat(pid)[21]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def threads(pid: int) -> int:
    return int(proc_stat(pid)[17])


def tree_rss_mb(pid: int) -> float:
    return rss_mb(pid) + sum(tree_rss_mb(child) for child in children_of(pid))


def pg_connections() -> int:
    """Connections of the web processes (their application_name), read with psycopg
    itself: this is called from the event loop."""
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity "
                            "WHERE application_name = %s", [APP]).fetchone()[0]


def web(name: str, port: int, env: dict[str, str], logs: Path) -> Process:
    return Process(name, web_argv(port, log_level="warning"), env, logs,
                   ready=lambda p: healthy(f"http://127.0.0.1:{port}"))


async def rest_p50(base: str, token: str, run: str, n: int = 100) -> float:
    samples = []
    async with httpx.AsyncClient(base_url=base, timeout=30,
                                 headers={"Authorization": f"Token {token}"}) as client:
        for _ in range(n):
            began = time.perf_counter()
            r = await client.get(f"/api/runs/{run}/")
            samples.append(time.perf_counter() - began)
            assert r.status_code == 200, r.text
    return percentile(samples, 50) * 1000


async def measure(port: int, token: str, runs: list[str], n: int, events: int,
                  base: str, wave: int) -> dict:
    stop = asyncio.Event()
    streams = [Stream(port, f"/api/runs/{runs[i % len(runs)]}/events/", token,
                      head_timeout=120, reconnect=False) for i in range(n)]
    began = time.monotonic()
    tasks = []
    for first in range(0, n, wave):  # in waves, as browsers arrive
        batch = streams[first:first + wave]
        tasks += [asyncio.ensure_future(s.run(stop, stamp=True)) for s in batch]
        wave_end = time.monotonic() + 2
        while not all(s.status for s in batch) and time.monotonic() < wave_end:
            await asyncio.sleep(0.01)
    deadline = began + 180
    while (sum(1 for s in streams if s.opened_at or s.status not in (0, 200)) < n
           and time.monotonic() < deadline):
        await asyncio.sleep(0.05)
    opened = [s for s in streams if s.opened_at]
    open_s = (max(s.opened_at for s in opened) - began) if opened else float("nan")
    # The stored history read; and through Pushpin, each newly subscribed channel's
    # streams ask their next link once (Pushpin does 10 such updates a second, each for
    # up to 100 streams of one link): events wait for that, so it is let pass first.
    await asyncio.sleep(1.0 + len(runs) * max(1, n // len(runs) // 100) / 10)
    refused = sum(1 for s in streams if s.status not in (0, 200))
    out = {"n": n, "opened": f"{len(opened)}" + (f" ({refused} refused)" if refused else ""),
           "open_s": open_s}
    out["rest_p50"] = await rest_p50(base, token, runs[0])
    for s in streams:
        s.latencies.clear()
    for _ in range(events):  # one event per run, every 200 ms
        for run in runs:
            publish(run, [CustomEvent(name="bench", value={"t": time.time()})])
        await asyncio.sleep(0.2)
    expected = events * len(opened)
    deadline = time.monotonic() + 30
    while sum(len(s.latencies) for s in streams) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    latencies = [x for s in streams for x in s.latencies]
    out["got"], out["expected"] = len(latencies), expected
    out["p50"] = percentile(latencies, 50) * 1000 if latencies else float("nan")
    out["p99"] = percentile(latencies, 99) * 1000 if latencies else float("nan")
    out["streams"], out["tasks"], out["stop"] = streams, tasks, stop
    return out


async def close(out: dict) -> None:
    out["stop"].set()
    await asyncio.sleep(0.5)
    for task in out["tasks"]:
        task.cancel()
    await asyncio.gather(*out["tasks"], return_exceptions=True)
    await asyncio.sleep(2)  # the server side lets go


async def one(port: int, token: str, runs: list[str], n: int, events: int, base: str,
              numbers, wave: int = 250) -> tuple[dict, str]:  # noqa: ANN001
    """Measure N streams, read the processes' numbers with all open, close them."""
    out = await measure(port, token, runs, n, events, base, wave)
    line = numbers(out)
    await close(out)
    return out, line


def row(variant: str, out: dict, pushpin: str, webs: list[tuple[float, int]], pg: int) -> str:
    web_text = " / ".join(f"{rss:.0f} MB, {t} thr" for rss, t in webs)
    return (f"| {variant} | {out['n']} | {out['opened']} | {out['open_s']:.1f} s | {pushpin} | "
            f"{web_text} | {pg} | {out['p50']:.1f} / {out['p99']:.1f} ms "
            f"({out['got']}/{out['expected']}) | {out['rest_p50']:.1f} ms |")


HEADER = ("| variant | N | opened | time to open | Pushpin RSS | web RSS, threads | "
          "PG conns | latency p50 / p99 (events got) | REST p50 |\n"
          "|---|---|---|---|---|---|---|---|---|")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edge", default="100,1000,10000")
    parser.add_argument("--direct", default="100,1000,2000")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--events", type=int, default=5)
    parser.add_argument("--wave", type=int, default=250, help="streams opened at a time")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 10k sockets, inherited
    print(f"open files limit {hard}; {load()}")

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench-reviewer", password="x")
    user.user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    token = Token.objects.create(user=user).key
    connection.close()

    logs = Path(f"/tmp/agentsite-bench-streams-{os.getpid()}")
    logs.mkdir()
    env = {**os.environ, "REDIS_URL": settings.REDIS_URL, "CELERY_QUEUE": QUEUE}
    worker = worker_process(QUEUE, env, logs, concurrency=4, loglevel="INFO",
                            name=f"bench-{QUEUE}@%h")
    worker.start()
    table = [HEADER]
    try:
        # Direct first: one web process, no proxy.
        port = free_port()
        env["PGAPPNAME"] = APP  # the web processes' connections, counted
        direct = web("web-direct", port, env, logs)
        direct.start()
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, headers={"Authorization": f"Token {token}"},
                          timeout=60) as client:
            runs = []
            for _ in range(args.runs):
                started = client.post("/api/runs/", json={"agent": "dev", "message": "bench"})
                assert started.status_code == 201, started.text
                runs.append(started.json()["id"])
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                statuses = {client.get(f"/api/runs/{r}/").json()["status"] for r in runs}
                if statuses == {"paused"}:
                    break
                time.sleep(0.5)
        print(f"{len(runs)} runs paused; {load()}")
        pid = direct.proc.pid
        rest0 = asyncio.run(rest_p50(base, token, runs[0]))
        table.append(f"| direct | 0 | | | | {rss_mb(pid):.0f} MB, {threads(pid)} thr | "
                     f"{pg_connections()} | | {rest0:.1f} ms |")
        for n in [int(x) for x in args.direct.split(",") if x]:
            print(f"direct, {n} streams: {load()}")
            out, line = asyncio.run(one(port, token, runs, n, args.events, base, lambda o: row(
                "direct", o, "—", [(rss_mb(pid), threads(pid))], pg_connections()),
                args.wave))
            print(line, flush=True)
            table.append(line)
            if out["opened"] != str(n) or direct.proc.poll() is not None:
                print("direct path gave up here")
                break
        direct.stop()

        # The edge: Pushpin, two web processes, the forwarder.
        key = secrets.token_hex(16)
        http_port, publish_port = free_port(), free_port()
        web_ports = [free_port(), free_port()]
        edge_env = {**env, "GRIP_URL": grip_url(publish_port, key)}
        conf = pushpin_config(logs / "pushpin", http_port=http_port,
                              publish_port=publish_port, sig_key=key, targets=web_ports)
        webs = [web(f"web{i + 1}", p, edge_env, logs) for i, p in enumerate(web_ports)]
        pushpin = pushpin_process(conf, http_port, publish_port, edge_env, logs)
        forwarder = edge_process(edge_env, logs)
        started = []
        try:
            for process in (*webs, pushpin, forwarder):
                started.append(process)
                process.start()
            base = f"http://127.0.0.1:{http_port}"
            table.append("| edge | 0 | | | " + f"{tree_rss_mb(pushpin.proc.pid):.0f} MB | "
                         + " / ".join(f"{rss_mb(w.proc.pid):.0f} MB, {threads(w.proc.pid)} thr"
                                      for w in webs) + f" | {pg_connections()} | | "
                         f"{asyncio.run(rest_p50(base, token, runs[0])):.1f} ms |")
            for n in [int(x) for x in args.edge.split(",") if x]:
                print(f"edge, {n} streams: {load()}")
                out, line = asyncio.run(one(
                    http_port, token, runs, n, args.events, base, lambda o: row(
                        "edge", o, f"{tree_rss_mb(pushpin.proc.pid):.0f} MB",
                        [(rss_mb(w.proc.pid), threads(w.proc.pid)) for w in webs],
                        pg_connections()), args.wave))
                print(line, flush=True)
                table.append(line)
        finally:
            for process in reversed(started):
                process.stop()
    finally:
        worker.stop()
    print(f"\n{load()}\n")
    print("\n".join(table))
    print(f"\nlogs: {logs}")


if __name__ == "__main__":
    main()
