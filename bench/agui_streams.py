"""What AG-UI's direct path costs a web process: N concurrent AG-UI streams on one.

AG-UI answers are not held by Pushpin (docs/scaling.md, "AG-UI stays direct"): each one
is a coroutine in a web process for as long as its segment lasts. This bench holds N of
them open on one web process (uvicorn, as ``make run`` starts it) and reads what they
cost.

Each stream is ``POST /agui/slow_counted/connect/`` (the runs' owner's token) on one
of R runs of the test agent ``slow_counted`` (tests/slow_agents.py) whose first step
sleeps ``SLOW_STEP_SECONDS`` (an hour here) in the Celery worker: the run is live, so
connect joins its segment and the answer stays open until the segment ends. Streams are
spread round robin over the R runs and opened in waves by K client processes (plain
sockets, one asyncio loop each; K = N / 1,000 rounded up, at most 4). Per N it prints:

- time to open all N (the first request -> the last client has its ``RUN_STARTED``);
- the clients' own CPU (utime + stime of the K processes) while opening and while the
  events came;
- RSS and threads of the web process with all N open, and again 6 s after they closed;
- its Postgres connections (its own application_name) and its CPU while opening and
  while the events came;
- event latency p50 / p99: timestamped CUSTOM events published with ``publish()`` (the
  worker's publish function) by a process of its own (``bench/_stream_publisher.py``, as
  ``bench/streams.py``) at R a second for ``--seconds`` (one event a second per stream),
  -> the client has it, over every stream (one machine, one clock);
- REST p50: ``GET /api/runs/<id>/``, 100 sequential requests, with the N open.

Then, with ``--kill N``: N streams (and the official ``@ag-ui/client`` HttpAgent, Node,
from tests/node) open, the web process is stopped (``--kill-signal``: TERM as a restart
or deploy does, KILL as a crash), events are published while it is down, and it is
started again. Printed: how each stream ended (a clean end of the chunked body without
RUN_FINISHED, or cut), how long the stop took, and for clients that reconnect (connect
again after 0.2-1.2 s, until answered) how long until all were back and whether each got
the events published while the web process was down (connect replays the segment from
its RUN_STARTED: the client gets them, and everything before them again). The official
client's run is started on the same agent; what its ``runAgent`` got is printed, then a
new HttpAgent on the connect URL (same thread) reconnects, and the run is cancelled so
that its answer ends.

``--edge N,...``: the same N streams through Pushpin (deploy/pushpin/pushpin.conf:
``max_open_requests=100``) proxying to one web process (no GRIP: AG-UI answers are
streamed through, not held), to show what the proxy adds.

Streams open in waves of ``--wave`` (the next once the last has its RUN_STARTED, or after
2 s). With 250 at a time some answers are cut at once: the web process's asyncio Redis
client (streams/pubsub.py, redis-py's pool of at most 100 connections) raises
``MaxConnectionsError`` for a store read beyond 100 in flight, after the answer's 200
went out; the default, 50, is closer to clients arriving (docs/scaling.md, "AG-UI").

Its database is BENCH_DATABASE (default here agentsite_bench_agui), dropped and made anew.
Everything shares this machine's CPUs: the load is printed before each N.

Usage: python bench/agui_streams.py [--direct 100,500,1000,2000] [--edge 50,100,150]
       [--runs 8] [--seconds 5] [--wave 50] [--kill 500] [--kill-signal TERM]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import random
import resource
import secrets
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
os.environ.setdefault("BENCH_DATABASE", "agentsite_bench_agui")
# The test agents (slow_counted) for every process started from here, on no model.
os.environ["AGENTSITE_AGENT_MODULES"] = "agents.catalog,tests.agent_catalog"
os.environ["AGENT_MODEL"] = ""

from bench._database import fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
import psycopg  # noqa: E402
from ag_ui.core import CustomEvent  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from agentsite.processes import (  # noqa: E402
    ROOT,
    Process,
    free_port,
    healthy,
    pushpin_config,
    pushpin_installed,
    pushpin_process,
    web_argv,
    worker_process,
)
from agentsite.token_auth import token_issue  # noqa: E402
from bench._services import load, percentile, proc_stat  # noqa: E402
from streams.publish import publish  # noqa: E402
from tests.edge.sse_many import read_headers  # noqa: E402

APP = f"agentsite-bench-agui-{os.getpid()}"
QUEUE = f"bench-agui-{os.getpid()}"
AGENT = "slow_counted"
PUBLISHER = ROOT / "bench" / "_stream_publisher.py"
AGUI_CLIENT = ROOT / "tests" / "node" / "node_modules" / "@ag-ui" / "client" / "dist" / "index.mjs"


# --- The client side: AG-UI streams on plain sockets, in K forked processes ------------

@dataclass
class AguiStream:
    """One AG-UI connect answer, read on a plain socket (HTTP/1.1, chunked or not)."""

    port: int
    thread: str
    token: str
    index: int
    reconnect: bool = False
    status: int = 0
    opened_at: float = 0.0  # monotonic: the first RUN_STARTED of the first answer
    reopened_at: float = 0.0  # monotonic: the first RUN_STARTED of a later answer
    connects: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, "bench" events
    outage: dict[int, int] = field(default_factory=dict)  # "outage" event k -> times got
    ends: list[str] = field(default_factory=list)  # how each answer ended
    ended_at: float = 0.0  # monotonic: when the first answer ended
    error_body: bytes = b""

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                end = await self._once(stop)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                end = f"error {type(exc).__name__}"
            if end != "stopped":
                self.ends.append(end)
                if not self.ended_at:
                    self.ended_at = time.monotonic()
            if not self.reconnect or stop.is_set() or end in ("finished", "stopped"):
                return
            await asyncio.sleep(0.2 + random.random())  # many clients: spread out

    async def _once(self, stop: asyncio.Event) -> str:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port, limit=2 ** 22)
        self.connects += 1
        try:
            body = json.dumps({"threadId": self.thread,
                               "runId": f"bench-{self.index}-{self.connects}"}).encode()
            head = (f"POST /agui/{AGENT}/connect/ HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                    "Accept: text/event-stream\r\nContent-Type: application/json\r\n"
                    f"Authorization: Token {self.token}\r\nContent-Length: {len(body)}\r\n\r\n")
            writer.write(head.encode() + body)
            await writer.drain()
            status_line = await reader.readline()
            if not status_line:
                return "no answer"
            self.status = int(status_line.split()[1])
            headers = await read_headers(reader)
            if self.status != 200:
                length = int(headers.get("content-length", "0"))
                self.error_body = await reader.readexactly(length) if length else b""
                return f"status {self.status}"
            chunked = headers.get("transfer-encoding", "").lower() == "chunked"
            buffer = ""
            stopping = asyncio.ensure_future(stop.wait())
            try:
                while True:
                    read = asyncio.ensure_future(reader.readline() if chunked
                                                 else reader.read(65536))
                    done, _ = await asyncio.wait({read, stopping},
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if stopping in done:
                        read.cancel()
                        return "stopped"
                    got = read.result()
                    if chunked:
                        if not got:
                            return "cut"  # the connection closed mid-body
                        size = int(got.strip() or b"0", 16)
                        if size == 0:
                            return "closed"  # the body ended, without RUN_FINISHED
                        text = (await reader.readexactly(size + 2))[:-2].decode()
                    else:
                        if not got:
                            return "closed"
                        text = got.decode()
                    buffer += text
                    *blocks, buffer = buffer.split("\n\n")
                    now = time.time()
                    for block in blocks:
                        if self._event(block, now):
                            return "finished"
            finally:
                stopping.cancel()
        finally:
            writer.close()

    def _event(self, block: str, now: float) -> bool:
        """Take in one SSE block; True once the AG-UI run ended (RUN_FINISHED / RUN_ERROR)."""
        for line in block.split("\n"):
            if not line.startswith("data:"):
                continue  # ": keepalive" comments
            data = line[5:].lstrip()
            if data.startswith('{"type":"RUN_STARTED"'):
                if self.connects == 1 and not self.opened_at:
                    self.opened_at = time.monotonic()
                elif self.connects > 1 and not self.reopened_at:
                    self.reopened_at = time.monotonic()
            elif data.startswith(('{"type":"RUN_FINISHED"', '{"type":"RUN_ERROR"')):
                return True
            elif data.startswith('{"type":"CUSTOM"'):
                at = data.find('"t":')
                if '"name":"bench"' in data and at >= 0:
                    self.latencies.append(now - float(data[at + 4:data.find("}", at)]
                                                      .split(",")[0]))
                elif '"name":"outage"' in data:
                    k = json.loads(data)["value"]["k"]
                    self.outage[k] = self.outage.get(k, 0) + 1
        return False


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _serve(conn: Connection, port: int, threads: list[str], first: int, token: str,
                 wave: int, reconnect: bool) -> None:
    """One client process: its streams, driven step by step over ``conn``."""
    loop = asyncio.get_running_loop()

    async def recv() -> object:
        return await loop.run_in_executor(None, conn.recv)

    stop = asyncio.Event()
    streams = [AguiStream(port, thread, token, first + i, reconnect=reconnect)
               for i, thread in enumerate(threads)]
    tasks: list[asyncio.Future] = []
    while True:
        command, arg = await recv()  # type: ignore[misc]
        cpu0 = cpu_seconds()
        if command == "open":  # arg: seconds to wait for all
            for start in range(0, len(streams), wave):  # in waves, as clients arrive
                batch = streams[start:start + wave]
                tasks += [asyncio.ensure_future(s.run(stop)) for s in batch]
                wave_end = time.monotonic() + 2
                while (not all(s.opened_at or s.ends for s in batch)
                       and time.monotonic() < wave_end):
                    await asyncio.sleep(0.01)
            deadline = time.monotonic() + arg
            while (not all(s.opened_at or s.ends for s in streams)
                   and time.monotonic() < deadline):
                await asyncio.sleep(0.05)
            conn.send({"opened_at": [s.opened_at for s in streams],
                       "status": [s.status for s in streams],
                       "errors": [s.error_body.decode(errors="replace")[:300]
                                  for s in streams if s.error_body][:3],
                       "cpu": cpu_seconds() - cpu0})
        elif command == "measure":
            for s in streams:
                s.latencies.clear()
            conn.send("ready")
        elif command == "collect":  # arg: (events per stream, seconds to wait)
            expected, timeout = arg
            deadline = time.monotonic() + timeout
            opened = [s for s in streams if s.opened_at]
            while (any(len(s.latencies) < expected for s in opened)
                   and time.monotonic() < deadline):
                await asyncio.sleep(0.05)
            conn.send({"latencies": [x for s in opened for x in s.latencies],
                       "got": sum(len(s.latencies) for s in opened), "cpu": cpu_seconds()})
        elif command == "ended":  # arg: seconds to wait until every stream's first end
            deadline = time.monotonic() + arg
            while not all(s.ends for s in streams) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            conn.send({"ends": [s.ends[0] if s.ends else "" for s in streams],
                       "ended_at": [s.ended_at for s in streams]})
        elif command == "reopened":  # arg: (outage events per run, seconds to wait)
            count, timeout = arg
            deadline = time.monotonic() + timeout
            while (not all(len(s.outage) >= count for s in streams)
                   and time.monotonic() < deadline):
                await asyncio.sleep(0.05)
            conn.send({"reopened_at": [s.reopened_at for s in streams],
                       "connects": [s.connects for s in streams],
                       "outage": [dict(s.outage) for s in streams],
                       "ends": [list(s.ends) for s in streams], "cpu": cpu_seconds() - cpu0})
        elif command == "close":
            stop.set()
            await asyncio.sleep(0.5)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            conn.send("closed")
            return


def _client_main(conn: Connection, *args: object) -> None:
    asyncio.run(_serve(conn, *args))  # type: ignore[arg-type]


class Clients:
    """K forked client processes holding one AG-UI stream per thread id."""

    def __init__(self, k: int, port: int, threads: list[str], token: str, wave: int,
                 reconnect: bool = False) -> None:
        context = multiprocessing.get_context("fork")
        self.pipes: list[Connection] = []
        self.procs = []
        for i in range(k):
            parent, child = context.Pipe()
            proc = context.Process(target=_client_main, daemon=True, args=(
                child, port, threads[i::k], i * len(threads), token, max(1, wave // k),
                reconnect))
            proc.start()
            child.close()
            self.pipes.append(parent)
            self.procs.append(proc)

    def ask(self, command: str, arg: object = None) -> list:
        for pipe in self.pipes:
            pipe.send((command, arg))
        return [pipe.recv() for pipe in self.pipes]

    def close(self) -> None:
        self.ask("close")
        for proc in self.procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()


# --- The server side -----------------------------------------------------------------

def rss_mb(pid: int) -> float:
    return int(proc_stat(pid)[21]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def thread_count(pid: int) -> int:
    return int(proc_stat(pid)[17])


def cpu_s(pid: int) -> float:
    return sum(int(x) for x in proc_stat(pid)[11:13]) / os.sysconf("SC_CLK_TCK")


def pg_connections(name: str) -> int:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                            [f"{APP}-{name}"]).fetchone()[0]


def web(name: str, port: int, env: dict[str, str], logs: Path) -> Process:
    return Process(name, web_argv(port, log_level="warning"),
                   {**env, "PGAPPNAME": f"{APP}-{name}"}, logs,
                   ready=lambda p: healthy(f"http://127.0.0.1:{port}"))


async def rest_p50(base: str, token: str, run: str, n: int) -> str:
    """p50 of ``GET /api/runs/<id>/``, n in a row; requests not answered in 10 s counted."""
    samples, unanswered = [], 0
    async with httpx.AsyncClient(base_url=base, timeout=10,
                                 headers={"Authorization": f"Token {token}"}) as client:
        for _ in range(n):
            began = time.perf_counter()
            try:
                r = await client.get(f"/api/runs/{run}/")
            except httpx.TimeoutException:
                unanswered += 1
                if unanswered == 3:  # the rest would wait as long
                    n = len(samples) + unanswered
                    break
                continue
            samples.append(time.perf_counter() - began)
            assert r.status_code == 200, r.text
    text = f"{percentile(samples, 50) * 1000:.1f} ms" if samples else "none answered"
    return text + (f" ({unanswered} of {n} unanswered in 10 s)" if unanswered else "")


HEADER = ("| variant | N | load | opened | time to open | client: K, CPU open / events | "
          "web RSS open → closed | web threads open → closed | web PG | web CPU open / events | "
          "latency p50 / p99 (events got) | REST p50 |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|")


@dataclass
class Bench:
    args: argparse.Namespace
    token: str
    runs: list[str]  # run ids
    threads: list[str]  # their thread ids, in the same order
    env: dict[str, str]
    logs: Path
    failed: bool = False  # the last round did not open every stream

    def round(self, variant: str, port: int, webp: Process, n: int) -> str:
        """N streams: open, read the web process, publish, collect, close."""
        args = self.args
        load_before = os.getloadavg()[0]
        print(f"{variant}, {n} AG-UI streams: {load()}", flush=True)
        base = f"http://127.0.0.1:{port}"
        pid = webp.proc.pid
        k = args.clients or max(1, min(4, math.ceil(n / 1000)))
        threads = [self.threads[i % len(self.threads)] for i in range(n)]
        clients = Clients(k, port, threads, self.token, args.wave)
        try:
            cpu0 = cpu_s(pid)
            began = time.monotonic()
            answers = clients.ask("open", 30 if variant == "edge" else 300)
            opened_at = [t for a in answers for t in a["opened_at"] if t]
            open_s = (max(opened_at) - began) if opened_at else float("nan")
            statuses: dict[int, int] = {}
            for a in answers:
                for status in a["status"]:
                    statuses[status] = statuses.get(status, 0) + 1
            open_cpu = sum(a["cpu"] for a in answers)
            web_open_cpu = cpu_s(pid) - cpu0
            waiting = n - len(opened_at)
            self.failed = waiting > 0
            opened_text = f"{len(opened_at)}" + (
                f" ({waiting} not: statuses {statuses})" if waiting else "")
            print(f"  opened {opened_text} in {open_s:.1f} s; clients' CPU {open_cpu:.1f} s "
                  f"({k} processes); web CPU {web_open_cpu:.1f} s", flush=True)
            for error in (e for a in answers for e in a["errors"]):
                print(f"  refusal: {error!r}")
            time.sleep(1)
            rss_open, threads_open = rss_mb(pid), thread_count(pid)
            pg = pg_connections(webp.name)
            rest = asyncio.run(rest_p50(base, self.token, self.runs[0],
                                        20 if variant == "edge" else 100))
            per_stream = max(1, round(args.seconds))
            clients.ask("measure")
            cpu0 = cpu_s(pid)
            client_cpu0 = sum(a["cpu"] for a in clients.ask("collect", (0, 0)))
            published = subprocess.run(
                [sys.executable, str(PUBLISHER), str(len(self.runs)), str(args.seconds),
                 *self.runs], env=self.env, cwd=ROOT, capture_output=True, text=True,
                timeout=600)
            if published.returncode:
                raise RuntimeError(f"publisher failed:\n{published.stderr[-3000:]}")
            pub = json.loads(published.stdout.strip().splitlines()[-1])
            collected = clients.ask("collect", (per_stream, 30))
            web_events_cpu = cpu_s(pid) - cpu0
            events_cpu = sum(a["cpu"] for a in collected) - client_cpu0
            pg_after = pg_connections(webp.name)
        finally:
            clients.close()
        time.sleep(6)  # the web process lets go of what the streams held
        rss_closed, threads_closed = rss_mb(pid), thread_count(pid)
        lat = [x for a in collected for x in a["latencies"]]
        got = sum(a["got"] for a in collected)
        expected = per_stream * len(opened_at)
        p50 = percentile(lat, 50) * 1000 if lat else float("nan")
        p99 = percentile(lat, 99) * 1000 if lat else float("nan")
        print(f"  published {pub['published']} in {pub['seconds']} s (publish() p50 "
              f"{pub['publish_p50']} ms); {expected} deliveries expected, {got} got; "
              f"web CPU {web_events_cpu:.1f} s, clients' CPU {events_cpu:.1f} s while they "
              f"came; PG {pg} with the streams open, {pg_after} after the events", flush=True)
        line = (f"| {variant} | {n} | {load_before:.2f} | {opened_text} | {open_s:.1f} s | "
                f"{k}, {open_cpu:.1f} s / {events_cpu:.1f} s | {rss_open:.0f} → "
                f"{rss_closed:.0f} MB | {threads_open} → {threads_closed} | {pg} | "
                f"{web_open_cpu:.1f} s / {web_events_cpu:.1f} s | {p50:.1f} / {p99:.1f} ms "
                f"({got}/{expected}) | {rest} |")
        print(line, flush=True)
        return line

    def kill(self, port: int, webp: Process, n: int) -> list[str]:
        """N reconnecting streams and the official client; stop the web process, publish
        while it is down, start it again."""
        args = self.args
        out = [f"web restart under {n} AG-UI streams (SIG{args.kill_signal}; web argv: "
               f"{' '.join(webp.argv[2:])}); {load()}"]
        print(out[0], flush=True)
        official = OfficialClient(port, self.token, self.logs)
        k = args.clients or max(1, min(4, math.ceil(n / 1000)))
        threads = [self.threads[i % len(self.threads)] for i in range(n)]
        clients = Clients(k, port, threads, self.token, args.wave, reconnect=True)
        try:
            answers = clients.ask("open", 300)
            opened = sum(1 for a in answers for t in a["opened_at"] if t)
            official.wait_for("STEP_STARTED", 60)
            rss_before = rss_mb(webp.proc.pid)
            out.append(f"  {opened} of {n} open; the official client's run is in its first "
                       f"step; web RSS {rss_before:.0f} MB, {thread_count(webp.proc.pid)} "
                       "threads")
            print(out[-1], flush=True)
            began = time.monotonic()
            os.killpg(webp.proc.pid, getattr(signal, f"SIG{args.kill_signal}"))
            webp.proc.wait(60)
            stopped_s = time.monotonic() - began
            ended = clients.ask("ended", 30)
            kinds: dict[str, int] = {}
            for a in ended:
                for kind in a["ends"]:
                    kinds[kind or "still open"] = kinds.get(kind or "still open", 0) + 1
            last_end = max((t for a in ended for t in a["ended_at"] if t), default=began)
            out.append(f"  web process gone after {stopped_s:.1f} s; the streams' answers "
                       f"ended: {kinds}, the last {last_end - began:.1f} s after the signal")
            print(out[-1], flush=True)
            outage = 3
            for k_event in range(outage):  # while it is down, from this process
                for run in [*self.runs, official.run_id()]:
                    publish(run, [CustomEvent(name="outage", value={"k": k_event})])
            connection.close()
            restart = time.monotonic()
            webp.start()
            up_s = time.monotonic() - restart
            back = clients.ask("reopened", (outage, 120))
            reopened = [t for a in back for t in a["reopened_at"] if t]
            complete = sum(1 for a in back for o in a["outage"] if len(o) >= outage)
            dupes = sum(1 for a in back for o in a["outage"] if any(c > 1 for c in o.values()))
            connects = [c for a in back for c in a["connects"]]
            out.append(
                f"  web started again in {up_s:.1f} s (healthy); {len(reopened)} of {n} "
                f"reopened, the last {max(reopened) - restart if reopened else float('nan'):.1f}"
                f" s after the start ({sum(connects) - n} reconnect requests, the most for one "
                f"stream {max(connects) - 1}); {complete} got all {outage} events published "
                f"while it was down ({dupes} some twice), each with the segment replayed "
                f"before them; web RSS {rss_mb(webp.proc.pid):.0f} MB, "
                f"{thread_count(webp.proc.pid)} threads; clients' CPU "
                f"{sum(a['cpu'] for a in back):.1f} s")
            print(out[-1], flush=True)
            official.cancel_and_finish(self.token, port)
            out += official.summary()
            for line in out[-len(official.summary()):]:
                print(line, flush=True)
        finally:
            clients.close()
            official.stop()
        return out


class OfficialClient:
    """@ag-ui/client's HttpAgent (Node) on its own thread: runAgent on the slow agent;
    after that answer ends, a new HttpAgent on the connect URL (same thread) reconnects
    every 0.5 s until answered. One JSON line per thing it sees."""

    SCRIPT = """
import { HttpAgent } from %(client)s;
const [BASE, TOKEN, THREAD] = process.argv.slice(2);
const t0 = Date.now();
const log = (o) => console.log(JSON.stringify({ s: (Date.now() - t0) / 1000, ...o }));
const headers = { Authorization: `Token ${TOKEN}` };
// A cut answer also rejects a promise inside the client that nobody awaits; Node's
// default (throw) would end this process there. Logged instead, and counted.
process.on("unhandledRejection", (err) => log({ unhandled: String(err?.message ?? err) }));
const watch = (phase) => ({
  onEvent: ({ event }) => log({ phase, event: event.type, name: event.name }),
  onRunFailed: ({ error }) => log({ phase, failed: String(error?.message ?? error) }),
});
const agent = new HttpAgent({ url: `${BASE}/agui/%(agent)s/`, headers, threadId: THREAD });
try {
  await agent.runAgent({ forwardedProps: { input: { topic: "restart" } } }, watch("run"));
  log({ phase: "run", resolved: true });
} catch (err) {
  log({ phase: "run", rejected: String(err?.message ?? err), cause: String(err?.cause ?? "") });
}
for (let attempt = 1; attempt <= 240; attempt++) {
  const again = new HttpAgent({ url: `${BASE}/agui/%(agent)s/connect/`, headers,
                                threadId: THREAD });
  try {
    await again.runAgent({}, watch("connect"));
    log({ phase: "connect", attempt, resolved: true, state: again.state,
          messages: again.messages.length });
    break;
  } catch (err) {
    log({ phase: "connect", attempt, rejected: String(err?.message ?? err) });
    await new Promise((r) => setTimeout(r, 500));
  }
}
"""

    def __init__(self, port: int, token: str, logs: Path) -> None:
        self.thread = str(uuid.uuid4())
        script = logs / "official_client.mjs"
        script.write_text(self.SCRIPT % {"client": json.dumps(str(AGUI_CLIENT)),
                                         "agent": AGENT})
        self.lines: list[dict] = []
        self.proc = subprocess.Popen(
            ["node", str(script), f"http://127.0.0.1:{port}", token, self.thread],
            stdout=subprocess.PIPE, stderr=open(logs / "official_client.log", "w"), text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.lines.append(json.loads(line))
            except ValueError:
                self.lines.append({"raw": line.strip()})

    def wait_for(self, event: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(x.get("event") == event for x in self.lines):
            if time.monotonic() > deadline:
                raise RuntimeError(f"official client: no {event} in {timeout} s: {self.lines}")
            time.sleep(0.1)

    def run_id(self) -> str:
        from runs.models import AgentRun

        run = AgentRun.objects.get(thread_id=self.thread)
        connection.close()
        return str(run.id)

    def cancel_and_finish(self, token: str, port: int) -> None:
        """Once its reconnect has the replayed outage events, cancel its run (REST):
        the cancel's RUN_FINISHED ends that answer."""
        deadline = time.monotonic() + 120
        while (sum(1 for x in self.lines if x.get("phase") == "connect"
                   and x.get("name") == "outage") < 3 and time.monotonic() < deadline):
            time.sleep(0.1)
        r = httpx.post(f"http://127.0.0.1:{port}/api/runs/{self.run_id()}/cancel/",
                       headers={"Authorization": f"Token {token}"}, timeout=30)
        assert r.status_code == 200, r.text
        self.proc.wait(60)
        time.sleep(0.2)

    def summary(self) -> list[str]:
        run = [x for x in self.lines if x.get("phase") == "run"]
        connect = [x for x in self.lines if x.get("phase") == "connect"]
        got = [x["event"] + (f"({x['name']})" if x.get("name") else "")
               for x in connect if "event" in x]
        tried = [x for x in connect if "attempt" in x]
        unhandled = [x["unhandled"] for x in self.lines if "unhandled" in x]
        return [
            f"  official client: {len(unhandled)} unhandled rejections inside it "
            f"({'; '.join(sorted(set(unhandled)))}): without a handler Node ends the process",
            "  official client, runAgent: events " + ", ".join(
                x["event"] for x in run if "event" in x) + "; then "
            + "; ".join(json.dumps({k: v for k, v in x.items() if k not in ("phase", "event",
                                                                           "name")})
                        for x in run if "event" not in x),
            f"  official client, reconnect (new HttpAgent on connect/): {len(tried)} attempts "
            + "(" + "; ".join(sorted({x.get('rejected', 'resolved') for x in tried})) + "), "
            f"events of the last: {', '.join(got)}",
        ]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--direct", default="100,500,1000,2000")
    parser.add_argument("--edge", default="", help="N through Pushpin (proxying, not holding)")
    parser.add_argument("--runs", type=int, default=8, help="live runs the streams follow")
    parser.add_argument("--seconds", type=float, default=5, help="seconds of events")
    parser.add_argument("--wave", type=int, default=50, help="streams opened at a time")
    parser.add_argument("--clients", type=int, default=0, help="client processes (0: N/1000)")
    parser.add_argument("--kill", type=int, default=500, help="streams open at the restart "
                        "(0: none)")
    parser.add_argument("--kill-signal", default="TERM", choices=["TERM", "KILL"])
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # sockets, inherited
    print(f"open files limit {hard}; {load()}; {args.runs} live {AGENT} runs, "
          f"{args.runs:g} events a second for {args.seconds:g} s")

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench-agui-owner", password="x")
    token = token_issue(user=user, name="bench", scopes="admin")[1]
    connection.close()

    logs = Path(f"/tmp/agentsite-bench-agui-{os.getpid()}")
    logs.mkdir()
    # Every run's first step sleeps an hour: its segment stays live for the whole bench.
    env = {**os.environ, "REDIS_URL": settings.REDIS_URL, "CELERY_QUEUE": QUEUE,
           "SLOW_STEP_SECONDS": "3600"}
    # A running segment keeps its thread's Django connection: the pool needs a slot more
    # than the worker has threads (the official client's run is one more).
    worker = worker_process(QUEUE, {**env, "DB_POOL_MAX": str(args.runs + 4)}, logs,
                            concurrency=args.runs + 1, loglevel="INFO",
                            name=f"bench-{QUEUE}@%h")
    worker.start()
    table = [HEADER]
    notes: list[str] = []
    try:
        port = free_port()
        direct = web("web", port, env, logs)
        direct.start()
        base = f"http://127.0.0.1:{port}"
        runs, threads = [], []
        with httpx.Client(base_url=base, headers={"Authorization": f"Token {token}"},
                          timeout=60) as client:
            for i in range(args.runs):
                started = client.post("/api/runs/", json={"agent": AGENT, "message": "bench",
                                                          "input": {"topic": f"t{i}"}})
                assert started.status_code == 201, started.text
                runs.append(started.json()["id"])
                threads.append(started.json()["thread_id"])
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                statuses = {client.get(f"/api/runs/{r}/").json()["status"] for r in runs}
                if statuses == {"running"}:
                    break
                time.sleep(0.5)
            assert statuses == {"running"}, statuses
        time.sleep(1)  # each segment's RUN_STARTED published
        print(f"{len(runs)} runs in their first step; {load()}", flush=True)
        bench = Bench(args, token, runs, threads, env, logs)
        try:
            rest = asyncio.run(rest_p50(base, token, runs[0], 100))
            table.append(f"| direct | 0 | {os.getloadavg()[0]:.2f} | | | | "
                         f"{rss_mb(direct.proc.pid):.0f} MB | {thread_count(direct.proc.pid)} "
                         f"| {pg_connections('web')} | | | {rest} |")
            for n in [int(x) for x in args.direct.split(",") if x]:
                table.append(bench.round("direct", port, direct, n))
                if bench.failed:
                    print(f"stopping at {n}: not every stream opened")
                    break
            if args.kill:
                notes += bench.kill(port, direct, args.kill)
        finally:
            direct.stop()
        if args.edge and pushpin_installed():
            edge_web = web("web-edge", free_port(), env, logs)
            http_port, publish_port = free_port(), free_port()
            conf = pushpin_config(logs / "pushpin", http_port=http_port,
                                  publish_port=publish_port, sig_key=secrets.token_hex(16),
                                  targets=[int(edge_web.argv[edge_web.argv.index("--port")
                                                             + 1])])
            pushpin = pushpin_process(conf, http_port, publish_port, env, logs)
            started = []
            try:
                for process in (edge_web, pushpin):
                    started.append(process)
                    process.start()
                for n in [int(x) for x in args.edge.split(",") if x]:
                    table.append(bench.round("edge", http_port, edge_web, n))
            finally:
                for process in reversed(started):
                    process.stop()
    finally:
        worker.stop(sig=signal.SIGKILL)  # its runs sleep an hour in their first step
    print(f"\n{load()}\n")
    print("\n".join(table))
    print("\n" + "\n".join(notes))
    print(f"\nlogs: {logs}")


if __name__ == "__main__":
    main()
