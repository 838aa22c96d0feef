"""Live events (SSE): publish → browser-stream latency, and what 500 open streams cost.

Starts a Celery worker + web server (bench/_services.Stack) and one more web process
that serves the streams, with its own Postgres application_name so its connections can
be counted in pg_stat_activity. Then, all on loopback:
1. dev runs through the worker (start + 4 answers), an SSE stream open on each run:
   latency = client receive time − the AG-UI event's ``timestamp`` (set by the worker
   as it makes the event, ms resolution), for every event of segments 2..5 (live ones);
2. ``publish()`` (the worker's publish function) of timestamped CUSTOM events on a run
   channel → receive on its stream: the publish → Redis pub/sub → web → client path alone;
3. N (500) concurrent open streams on the stream web process: its RSS, threads and
   Postgres connections before and with all open, and (2) again with all of them open.

Prints the machine load before and after each part, and a per-phase breakdown of the
dev runs' resumed segments (REST resume → RUN_FINISHED on the SSE stream).

Usage: python bench/events.py [--runs 20] [--streams 500] [--publishes 300] [--wave 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
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
from ag_ui.core import CustomEvent  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from agentsite import timing  # noqa: E402
from agentsite.processes import web_process  # noqa: E402
from agentsite.token_auth import token_issue  # noqa: E402
from bench import _timing  # noqa: E402
from bench._services import Stack, free_port, load, percentile  # noqa: E402
from streams.publish import publish  # noqa: E402

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]
APP_NAME = f"agentsite-bench-sse-{os.getpid()}"
# Marks this run's CUSTOM events: a stream replays those of earlier runs of the bench too.
SESSION = f"{os.getpid()}-{time.time()}"
logging.getLogger("httpx").setLevel(logging.WARNING)


class Stream:
    """One SSE stream read in the background; events land in ``events`` with receive times."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client, self.url = client, url
        self.events: list[tuple[float, dict]] = []
        self.opened = asyncio.Event()
        self.changed = asyncio.Event()
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async with self.client.stream("GET", self.url) as response:
            assert response.status_code == 200, (self.url, response.status_code)
            kind, data = "message", []
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif line == "":
                    if kind == "stream-open":
                        self.opened.set()
                    elif kind == "message" and data:
                        self.events.append((time.time(), json.loads("\n".join(data))))
                        self.changed.set()
                    kind, data = "message", []

    async def wait_for(self, test, timeout: float = 60) -> dict:
        """The first event (from the start of the stream) that passes ``test``."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for _, event in self.events[seen:]:
                if test(event):
                    return event
            seen = len(self.events)
            self.changed.clear()
            if self.task.done():
                self.task.result()
                raise EOFError(self.url)
            await asyncio.wait_for(self.changed.wait(), max(0.01, deadline - time.monotonic()))

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def finishes(n: int, run_id: str | None = None):
    count = 0

    def test(event: dict) -> bool:
        nonlocal count
        if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            count += 1
            if run_id and count == n:
                _timing.mark(run_id, "client_done")
        return count >= n
    return test


# Made in the pause / finish transaction and published when it commits: their latency
# includes that commit (the event is stamped when it is made, before the commit).
ON_COMMIT = ("STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED", "RUN_ERROR")


async def drive_run(rest: httpx.AsyncClient, sse: httpx.AsyncClient,
                    driven: list[str]) -> list[tuple[float, bool]]:
    """A full dev run with its stream open (its id added to ``driven``); latencies (ms)
    of the live segments' events, each with whether it was published on commit."""
    run = (await rest.post("/api/runs/", json={"agent": "dev", "input": {"topic": "b"}})).json()
    driven.append(run["id"])
    stream = Stream(sse, f"/api/runs/{run['id']}/events/")
    try:
        first_live = None
        for i, payload in enumerate(ANSWERS, start=1):
            finished = await stream.wait_for(finishes(i, run["id"]))
            if first_live is None:
                first_live = len(stream.events)
            _timing.mark(run["id"], "client_send")
            r = await rest.post(f"/api/runs/{run['id']}/resume/", json={
                "interrupt_id": finished["outcome"]["interrupts"][0]["id"], "payload": payload})
            assert r.status_code == 202, r.text
        final = await stream.wait_for(finishes(len(ANSWERS) + 1, run["id"]))
        assert final["outcome"]["type"] == "success", final
        return [((got - event["timestamp"] / 1000) * 1000, event["type"] in ON_COMMIT)
                for got, event in stream.events[first_live:] if event.get("timestamp")]
    finally:
        await stream.close()


async def publish_latency(sse: httpx.AsyncClient, run_id: str, count: int) -> list[float]:
    """publish() one timestamped CUSTOM event at a time; ms until the stream has it."""
    stream = Stream(sse, f"/api/runs/{run_id}/events/")
    await stream.wait_for(finishes(len(ANSWERS) + 1))  # the stored history, replayed
    out = []
    try:
        for i in range(count):
            sent = time.time()
            await asyncio.to_thread(publish, run_id, [CustomEvent(
                name="bench", value={"i": i, "t": sent, "session": SESSION})])
            event = await stream.wait_for(lambda e, i=i: e["type"] == "CUSTOM"
                                          and e["value"]["i"] == i
                                          and e["value"].get("session") == SESSION)
            got = next(t for t, e in reversed(stream.events) if e is event)
            out.append((got - event["value"]["t"]) * 1000)
            await asyncio.sleep(0.005)
        return out
    finally:
        await stream.close()


def proc_status(pid: int) -> dict[str, str]:
    rows = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(row.split(":", 1) for row in rows if ":" in row)


def web_numbers(pid: int) -> tuple[float, int, int]:
    """(RSS MiB, threads, Postgres connections) of the stream web process."""
    status = proc_status(pid)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                       [APP_NAME])
        pg = cursor.fetchone()[0]
    return int(status["VmRSS"].split()[0]) / 1024, int(status["Threads"]), pg


def report(name: str, samples: list[float]) -> None:
    print(f"{name:<44} n={len(samples):<5} p50={percentile(samples, 50):7.1f} ms   "
          f"p99={percentile(samples, 99):7.1f} ms")


async def bench(stack: Stack, sse_url: str, sse_pid: int, token: str, args) -> None:
    headers = {"Authorization": f"Token {token}"}
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    timeout = httpx.Timeout(60, pool=None)
    async with httpx.AsyncClient(base_url=stack.base_url, headers=headers,
                                 timeout=timeout) as rest, \
            httpx.AsyncClient(base_url=sse_url, headers=headers, timeout=timeout,
                              limits=limits) as sse:
        # This sitting's runs: an earlier sitting's may have no stored events left (they
        # expire), and the streams below replay a run's stored history.
        driven: list[str] = []
        await drive_run(rest, sse, driven)  # warm-up
        timing.configure(str(stack.timing_log))
        time.sleep(2 * timing.FLUSH_SECONDS)  # the warm-up's marks are out first
        stack.timing_log.write_text("")
        print(f"dev runs: {load()} before")
        lat: list[tuple[float, bool]] = []
        for _ in range(args.runs):
            lat += await drive_run(rest, sse, driven)
        timing.configure("")
        print(f"dev runs: {load()} after")
        report(f"worker event → SSE client, {args.runs} dev runs", [ms for ms, _ in lat])
        report("  published as made (steps, text)", [ms for ms, late in lat if not late])
        report("  made in the pause/finish transaction", [ms for ms, late in lat if late])
        runs = driven[::-1]  # the newest first
        report("publish() → SSE client, 1 stream open",
               await publish_latency(sse, runs[0], args.publishes))
        print(f"publish(): {load()} after")
        print("target: worker event → SSE client p99 <= 5 ms")
        _timing.print_breakdown(stack.timing_log, "REST resume → RUN_FINISHED on the "
                                "run's SSE stream")
        print()

        rss0, threads0, pg0 = await sync_to_async(web_numbers)(sse_pid)
        t0 = time.perf_counter()
        streams: list[Stream] = []
        while len(streams) < args.streams:  # in waves, as browsers arrive
            wave = [Stream(sse, f"/api/runs/{runs[i % len(runs)]}/events/")
                    for i in range(len(streams), min(args.streams, len(streams) + args.wave))]
            await asyncio.wait_for(asyncio.gather(*(s.opened.wait() for s in wave)), 120)
            streams += wave
        opened = time.perf_counter() - t0
        await asyncio.sleep(1)
        rss1, threads1, pg1 = await sync_to_async(web_numbers)(sse_pid)
        report(f"publish() → SSE client, {args.streams} streams open",
               await publish_latency(sse, runs[-1], args.publishes))
        print(f"with {args.streams} streams: {load()} after")
        rss2, threads2, pg2 = await sync_to_async(web_numbers)(sse_pid)
        assert all(not s.task.done() for s in streams), "a stream ended early"
        for s in streams:
            await s.close()
        await asyncio.sleep(2)
        rss3, threads3, pg3 = await sync_to_async(web_numbers)(sse_pid)
        print(f"{args.streams} streams opened in {opened:.1f} s, {args.wave} at a time "
              f"(DB_POOL_MAX={os.environ.get('DB_POOL_MAX', '8')})")
        print(f"{'stream web process':<24}{'RSS MiB':>10}{'threads':>10}{'PG conns':>10}")
        for label, rss, threads, pg in (("before", rss0, threads0, pg0),
                                        (f"{args.streams} open", rss1, threads1, pg1),
                                        ("+ publish load", rss2, threads2, pg2),
                                        ("all closed", rss3, threads3, pg3)):
            print(f"{label:<24}{rss:>10.1f}{threads:>10}{pg:>10}")
        print(f"RSS per open stream: {(rss1 - rss0) * 1024 / args.streams:.1f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--publishes", type=int, default=300)
    parser.add_argument("--wave", type=int, default=50, help="streams opening at once")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench-events")
    token = token_issue(user=user, name="bench", scopes="admin")[1]
    connection.close()

    with Stack(f"agentsite-bench-{os.getpid()}") as stack:
        port = free_port()
        # The streams' web process, with its own application_name: only it is counted.
        web = web_process(port, {**stack.env, "PGAPPNAME": APP_NAME}, stack.logs,
                          log_level="warning")
        web.name = "web-sse"
        web.start()
        try:
            sse_url = f"http://127.0.0.1:{port}"
            print(f"loopback; Redis {settings.REDIS_URL.split('@')[-1]}; "
                  f"database {settings.DATABASES['default']['NAME']}")
            asyncio.run(bench(stack, sse_url, web.proc.pid, token, args))
        finally:
            web.stop()


if __name__ == "__main__":
    main()
