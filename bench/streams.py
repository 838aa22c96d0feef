"""Many browser streams: through Pushpin (the edge, docs/scaling.md) and direct.

For each N: N concurrent run streams (``/api/runs/<id>/events/``, a reviewer's token)
spread over R dev runs that a Celery worker paused, opened by K client processes
(``bench/_stream_clients.py``; K = N / 2,500 rounded up, at most 4, or ``--clients``),
then, while every stream is open, timestamped CUSTOM events published with ``publish()``
(the worker's publish function) by a process of its own (``bench/_stream_publisher.py``)
at a steady ``--rate`` for ``--seconds``, round robin over the runs. Printed per variant
and N, after the 1-min load average before it:

- time to open all N (the first connect -> the last ``stream-open``), refusals by status;
- the clients' own CPU (utime + stime of the K processes) while opening and while the
  events came, so a reader can judge how much of the 2 CPUs the bench itself took;
- RSS of Pushpin (its runner and services together); RSS and threads of each web process
  with all N open, and its RSS again a few seconds after they closed (a per-stream cost
  goes away with the streams, an allocator's high-water mark stays);
- Postgres connections of each web process (its own application_name; the edge's web
  processes run with ``DB_POOL_MAX=5``, ``--edge-db-pool``);
- CPU seconds of each web process and of Pushpin (its runner and services) while the
  streams opened and while the events came, and the edge forwarder's own summary (how
  long its publishes to Pushpin took: streams/edge.py);
- event latency p50 / p99: ``publish()`` -> the client has the event, over every stream
  (time.time() on both sides: one machine, one clock), and the first leg of it: publish
  -> the event out of Redis's fan-out (what the edge forwarder and direct streams read);
- REST p50: ``GET /api/runs/<id>/`` (through Pushpin for the edge), 100 sequential
  requests, with the N streams open.

Variants: ``edge`` = Pushpin + two web processes (GRIP_URL) + the edge forwarder;
``direct`` = one web process holding its streams (today's default), up to what it
survives. Everything shares this machine's CPUs: check ``uptime`` first.

Streams open in waves of ``--wave`` (split over the K processes; the next wave once the
last one is answered, or after 2 s), as browsers arrive; a refused stream is counted, not
retried. ``--pushpin-set log_level=3`` (debug) and ``--pushpin-set debug=true`` (error
details in the refusal's body) are for finding why Pushpin refuses; ``--pushpin-set``
replaces any key of deploy/pushpin/pushpin.conf. ``--forwarder-file FILE`` runs that
copy of streams/edge.py as the edge forwarder (an older one, to compare). ``--publish
http`` has the forwarder post to Pushpin's HTTP publish endpoint instead of pushing over
ZeroMQ (the default, GRIP_ZMQ_PUSH_URI), to compare.

Its database is BENCH_DATABASE (default agentsite_bench): give it a name of its own when
another bench may run at the same time (each drops and makes its database anew).

Usage: python bench/streams.py [--edge 100,1000,10000] [--direct 100,1000,2000]
       [--runs 100] [--rate 100] [--seconds 5] [--wave 250] [--clients K]
       [--forwarder-file FILE] [--publish zmq|http]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import resource
import secrets
import subprocess
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
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Permission  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from agentsite.processes import (  # noqa: E402
    ROOT,
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
    zmq_push_uri,
)
from agentsite.token_auth import token_issue  # noqa: E402
from bench._services import load, percentile, proc_stat  # noqa: E402
from bench._stream_clients import Clients  # noqa: E402

APP = f"agentsite-bench-streams-{os.getpid()}"
QUEUE = f"bench-streams-{os.getpid()}"
PUBLISHER = ROOT / "bench" / "_stream_publisher.py"


def rss_mb(pid: int) -> float:
    return int(proc_stat(pid)[21]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def threads(pid: int) -> int:
    return int(proc_stat(pid)[17])


def cpu_s(pid: int) -> float:
    """CPU seconds (utime + stime) of a process and its children, living and reaped."""
    fields = proc_stat(pid)
    own = sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return own + sum(cpu_s(child) for child in children_of(pid))


def tree_rss_mb(pid: int) -> float:
    return rss_mb(pid) + sum(tree_rss_mb(child) for child in children_of(pid))


def pg_connections() -> dict[str, int]:
    """Postgres connections per web process (each has its own application_name)."""
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        rows = conn.execute("SELECT application_name, count(*) FROM pg_stat_activity "
                            "WHERE application_name LIKE %s GROUP BY 1",
                            [f"{APP}-%"]).fetchall()
    return {name.removeprefix(f"{APP}-"): count for name, count in rows}


def tree_threads(pid: int) -> int:
    return threads(pid) + sum(tree_threads(child) for child in children_of(pid))


def web(name: str, port: int, env: dict[str, str], logs: Path, workers: int = 1) -> Process:
    # workers > 1: one uvicorn whose worker processes share its socket (--workers), the
    # kernel spreading connections over them (make run's edge; Pushpin has no balancing).
    argv = web_argv(port, log_level="warning") + (["--workers", str(workers)]
                                                  if workers > 1 else [])
    return Process(name, argv,
                   {**env, "PGAPPNAME": f"{APP}-{name}"}, logs,
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


def web_now(webs: list[Process]) -> str:
    # A uvicorn with --workers: its processes together.
    return " / ".join(f"{tree_rss_mb(w.proc.pid):.0f} MB, {tree_threads(w.proc.pid)} thr"
                      for w in webs)


def pg_text(webs: list[Process]) -> str:
    counts = pg_connections()
    return " / ".join(str(counts.get(w.name, 0)) for w in webs)


HEADER = ("| variant | N | load | opened | time to open | client: K, CPU open / events | "
          "Pushpin RSS | web RSS open → closed, threads | PG per web | "
          "latency p50 / p99 (events got) | publish → Redis fan-out p50 / p99 | REST p50 |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


def baseline(variant: str, webs: list[Process], pushpin: Process | None, base: str,
             token: str, run: str) -> str:
    pushpin_text = f"{tree_rss_mb(pushpin.proc.pid):.0f} MB" if pushpin else ""
    return (f"| {variant} | 0 | {os.getloadavg()[0]:.2f} | | | | {pushpin_text} | "
            f"{web_now(webs)} | {pg_text(webs)} | | | "
            f"{asyncio.run(rest_p50(base, token, run)):.1f} ms |")


def forwarder_line(forwarder: Process | None) -> str:
    """The edge forwarder's last summary (streams/edge.py logs one once the fan-out has
    been quiet for 5 s): how long its publishes to Pushpin took."""
    if forwarder is None:
        return ""
    lines = [x for x in forwarder.log().splitlines() if "published" in x and "events in" in x]
    return lines[-1].split("edge: ", 1)[-1] if lines else "no summary"


def one(variant: str, port: int, base: str, token: str, runs: list[str], n: int,
        args: argparse.Namespace, webs: list[Process], pushpin: Process | None,
        env: dict[str, str], forwarder: Process | None = None) -> tuple[str, int]:
    """N streams: open them, read the processes' numbers, publish, collect, close."""
    load_before = os.getloadavg()[0]
    print(f"{variant}, {n} streams: {load()}", flush=True)
    k = args.clients or max(1, min(4, math.ceil(n / 2500)))
    paths = [f"/api/runs/{runs[i % len(runs)]}/events/" for i in range(n)]
    clients = Clients(k, port, paths, token, args.wave)
    try:
        cpu0 = [cpu_s(w.proc.pid) for w in webs], cpu_s(pushpin.proc.pid) if pushpin else 0
        opened = clients.open()
        cpu1 = [cpu_s(w.proc.pid) for w in webs], cpu_s(pushpin.proc.pid) if pushpin else 0
        print("  CPU while opening: web " + " / ".join(
            f"{b - a:.1f} s" for a, b in zip(cpu0[0], cpu1[0], strict=True))
            + (f", Pushpin {cpu1[1] - cpu0[1]:.1f} s" if pushpin else ""), flush=True)
        refused = ", ".join(f"{c} {'no answer' if s == 0 else s}"
                            for s, c in sorted(opened.refused.items()))
        print(f"  opened {opened.opened} in {opened.open_s:.1f} s"
              + (f"; refused: {refused}" if refused else "")
              + f"; clients' CPU {opened.cpu:.1f} s ({k} processes)", flush=True)
        for error in opened.errors[:3]:
            print(f"  refusal: {error!r}")
        # The stored history read; and through Pushpin, each newly subscribed channel's
        # streams ask their next link once (Pushpin does 10 such updates a second, each
        # for up to 100 streams of one link): events wait for that, so it is let pass.
        if pushpin:
            time.sleep(1.0 + len(runs) * max(1, n // len(runs) // 100) / 10)
        rest = asyncio.run(rest_p50(base, token, runs[0]))
        web_open = [(tree_rss_mb(w.proc.pid), tree_threads(w.proc.pid)) for w in webs]
        pg = pg_text(webs)
        pushpin_text = f"{tree_rss_mb(pushpin.proc.pid):.0f} MB" if pushpin else "—"
        count = max(1, round(args.rate * args.seconds / len(runs))) * len(runs)
        per_stream = count // len(runs)
        clients.measure(per_stream)
        cpu0 = [cpu_s(w.proc.pid) for w in webs], cpu_s(pushpin.proc.pid) if pushpin else 0
        published = subprocess.run(
            [sys.executable, str(PUBLISHER), str(args.rate), str(count / args.rate), *runs],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
        if published.returncode:
            raise RuntimeError(f"publisher failed:\n{published.stderr[-3000:]}")
        pub = json.loads(published.stdout.strip().splitlines()[-1])
        collected = clients.collect(timeout=30)
        cpu1 = [cpu_s(w.proc.pid) for w in webs], cpu_s(pushpin.proc.pid) if pushpin else 0
        print("  CPU while the events came: web " + " / ".join(
            f"{b - a:.1f} s" for a, b in zip(cpu0[0], cpu1[0], strict=True))
            + (f", Pushpin {cpu1[1] - cpu0[1]:.1f} s" if pushpin else ""), flush=True)
    finally:
        clients.close()
    time.sleep(6)  # the web processes let go of what the streams held; the forwarder's
    # summary (after 5 s quiet)
    web_closed = [tree_rss_mb(w.proc.pid) for w in webs]
    lat = collected.latencies
    p50 = percentile(lat, 50) * 1000 if lat else float("nan")
    p99 = percentile(lat, 99) * 1000 if lat else float("nan")
    expected = per_stream * opened.opened
    print(f"  published {pub['published']} in {pub['seconds']} s (publish() p50 "
          f"{pub['publish_p50']} ms, p99 {pub['publish_p99']} ms); {expected} deliveries "
          f"expected, {collected.got} got, {collected.drops} streams dropped; clients' CPU "
          f"{collected.cpu:.1f} s while the events came; latency max "
          f"{max(lat, default=float('nan')) * 1000:.1f} ms, over 20 ms "
          f"{sum(1 for x in lat if x > 0.020)}", flush=True)
    if forwarder is not None:
        print(f"  edge forwarder: {forwarder_line(forwarder)}", flush=True)
    web_text = " / ".join(f"{o:.0f} → {c:.0f} MB, {t} thr"
                          for (o, t), c in zip(web_open, web_closed, strict=True))
    opened_text = f"{opened.opened}" + (f" ({refused} refused)" if refused else "")
    line = (f"| {variant} | {n} | {load_before:.2f} | {opened_text} | {opened.open_s:.1f} s | "
            f"{k}, {opened.cpu:.1f} s / {collected.cpu:.1f} s | {pushpin_text} | {web_text} | "
            f"{pg} | {p50:.1f} / {p99:.1f} ms ({collected.got}/{expected}) | "
            f"{pub['fanout_p50']} / {pub['fanout_p99']} ms | {rest:.1f} ms |")
    print(line, flush=True)
    return line, opened.opened


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--edge", default="100,1000,10000")
    parser.add_argument("--direct", default="100,1000,2000")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rate", type=float, default=100, help="events published a second")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--wave", type=int, default=250, help="streams opened at a time")
    parser.add_argument("--clients", type=int, default=0, help="client processes (0: N/2500)")
    parser.add_argument("--web-workers", type=int, default=1,
                        help="edge: one uvicorn with this many workers on one socket "
                             "(as make run starts it) instead of two web processes")
    parser.add_argument("--edge-db-pool", type=int, default=5,
                        help="DB_POOL_MAX of the web processes behind Pushpin")
    parser.add_argument("--pushpin-set", action="append", default=[], metavar="KEY=VALUE",
                        help="a key of deploy/pushpin/pushpin.conf replaced")
    parser.add_argument("--forwarder-file", default="",
                        help="run this copy of streams/edge.py as the edge forwarder")
    parser.add_argument("--publish", choices=("zmq", "http"), default="zmq",
                        help="the forwarder publishes over ZeroMQ (GRIP_ZMQ_PUSH_URI) or "
                             "to the HTTP publish endpoint")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 10k sockets, inherited
    print(f"open files limit {hard}; {load()}; {args.rate:g} events a second for "
          f"{args.seconds:g} s over {args.runs} runs")

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench-reviewer", password="x")
    user.user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    token = token_issue(user=user, name="bench", scopes="admin")[1]
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
        try:
            table.append(baseline("direct", [direct], None, base, token, runs[0]))
            for n in [int(x) for x in args.direct.split(",") if x]:
                line, opened = one("direct", port, base, token, runs, n, args, [direct], None,
                                   env)
                table.append(line)
                if opened != n or direct.proc.poll() is not None:
                    print("direct path gave up here")
                    break
        finally:
            direct.stop()

        # The edge: Pushpin, two web processes, the forwarder.
        key = secrets.token_hex(16)
        http_port, publish_port, push_port = free_port(), free_port(), free_port()
        web_ports = [free_port()] if args.web_workers > 1 else [free_port(), free_port()]
        edge_env = {**env, "GRIP_URL": grip_url(publish_port, key),
                    "DB_POOL_MAX": str(args.edge_db_pool)}
        if args.publish == "zmq":
            edge_env["GRIP_ZMQ_PUSH_URI"] = zmq_push_uri(push_port)
        conf = pushpin_config(logs / "pushpin", http_port=http_port,
                              publish_port=publish_port, sig_key=key, targets=web_ports,
                              push_port=push_port,
                              settings=dict(kv.split("=", 1) for kv in args.pushpin_set))
        webs = [web(f"web{i + 1}", p, edge_env, logs, args.web_workers)
                for i, p in enumerate(web_ports)]
        pushpin = pushpin_process(conf, http_port, publish_port, edge_env, logs)
        forwarder = edge_process(edge_env, logs)
        if args.forwarder_file:  # another copy of streams/edge.py (an older one: A/B)
            forwarder = Process("edge", [sys.executable, args.forwarder_file],
                                {**edge_env, "PYTHONPATH": str(ROOT)}, logs,
                                ready=forwarder.ready)
        started = []
        try:
            for process in (*webs, pushpin, forwarder):
                started.append(process)
                process.start()
            base = f"http://127.0.0.1:{http_port}"
            # A few events first: the forwarder's first publish opens its connection to
            # Pushpin (~100 ms here), which a running forwarder has long done.
            subprocess.run([sys.executable, str(PUBLISHER), "10", "1", runs[0]], env=edge_env,
                           cwd=ROOT, capture_output=True, timeout=120, check=True)
            table.append(baseline("edge", webs, pushpin, base, token, runs[0]))
            for n in [int(x) for x in args.edge.split(",") if x]:
                line, _ = one("edge", http_port, base, token, runs, n, args, webs, pushpin,
                              edge_env, forwarder)
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
