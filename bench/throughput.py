"""Throughput: full `dev` runs per second over AG-UI with N concurrent clients.

Each client loops: POST /agui/dev/ (start) + 4 resumes, each read to its RUN_FINISHED,
until the measuring window ends; runs/s = runs finished in the window / its length.
Stacks as ``make run`` starts them: one web process (uvicorn) and Celery worker
processes (threads pool): 1 worker with 8 slots (the ``make run`` default), 2 workers
with 8 slots each, and 1 worker with 2 slots (``WORKER_CONCURRENCY=2``), on the
configured Postgres and Redis. The clients run in this process (asyncio + httpx) and
share the machine's CPUs with the product: the load is printed with every number, and
the CPU time per run of the product, the clients, Postgres and Redis.

The ceiling of this machine: ``floorN`` runs the same graph with LangGraph + PostgresSaver
alone (no HTTP, no business rows, no events; bench/agui_peer.py's floor) in N processes,
each doing full runs back to back, and prints its runs/s and CPU per run the same way.

Usage: python bench/throughput.py [--clients 20] [--seconds 30]
                                  [--configs 1x8,2x8,1x2,peer,floor2,floor4] [--phases]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import empty_run_tables, fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from agentsite import timing  # noqa: E402
from agentsite.token_auth import token_issue  # noqa: E402
from bench import _timing  # noqa: E402
from bench._services import (  # noqa: E402
    Stack,
    load,
    percentile,
    proc_stat,
    server_cpu_seconds,
    servers_per_run,
)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


async def segment(client: httpx.AsyncClient, path: str, body: dict) -> dict:
    async with client.stream("POST", path, json=body) as r:
        if r.status_code != 200:
            await r.aread()
            raise RuntimeError(f"{r.status_code} {r.text[:300]}")
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["type"] == "RUN_ERROR":
                    raise RuntimeError(f"RUN_ERROR {event}")
                if event["type"] == "RUN_FINISHED":
                    return event
    raise RuntimeError("stream ended without RUN_FINISHED")


def run_input(thread: str, **extra: object) -> dict:
    return {"threadId": thread, "runId": str(uuid.uuid4()), "protocolVersion": "1.0",
            "state": {}, "messages": [], "tools": [], "context": [], "forwardedProps": {},
            **extra}


OURS_FIRST = {"forwardedProps": {"input": {"topic": "bench"}}}
PEER_FIRST = {"state": {"topic": "bench", "trace": []}}


async def full_run(client: httpx.AsyncClient, path: str, first: dict) -> None:
    thread = str(uuid.uuid4())
    finished = await segment(client, path, run_input(thread, **first))
    for payload in ANSWERS:
        (pending,) = finished["outcome"]["interrupts"]
        _timing.mark(thread, "client_send")
        finished = await segment(client, path, run_input(thread, resume=[
            {"interruptId": pending["id"], "status": "resolved", "payload": payload}]))
        _timing.mark(thread, "client_done")
    outcome = finished.get("outcome")  # the peer ends its last run without one
    assert outcome is None or outcome["type"] == "success", finished


async def drive(base_url: str, token: str, clients: int, seconds: float,
                warmup: float, path: str = "/agui/dev/",
                first: dict = OURS_FIRST) -> tuple[int, float, list[float], int]:
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(base_url=base_url, timeout=60, limits=limits,
                                 headers={"Authorization": f"Token {token}"} if token
                                 else {}) as client:
        start = time.monotonic()
        measure_from, measure_to = start + warmup, start + warmup + seconds
        done: list[tuple[float, float]] = []  # (finished at, took)

        async def loop() -> None:
            while time.monotonic() < measure_to:
                t0 = time.monotonic()
                await full_run(client, path, first)
                done.append((time.monotonic(), time.monotonic() - t0))

        await asyncio.gather(*(loop() for _ in range(clients)))
        inside = [took for at, took in done if measure_from <= at <= measure_to]
        return len(inside), seconds, inside, len(done)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of processes and their threads so far (children excluded)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = proc_stat(pid)
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _floor_process(deadline: float, out) -> None:  # noqa: ANN001
    from agents import dev
    from bench._services import stock_checkpointer
    from bench.agui_peer import floor_run

    graph = dev.build().compile(checkpointer=stock_checkpointer())
    floor_run(graph)  # warm: the first run compiles and connects
    cpu0, done = time.process_time(), []
    while time.monotonic() < deadline:
        took = floor_run(graph)
        done.append((time.monotonic(), took))
    out.put((done, time.process_time() - cpu0))


def drive_floor(args: argparse.Namespace, processes: int) -> tuple:
    """LangGraph + PostgresSaver alone in N processes, full runs back to back."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    start = time.monotonic()
    measure_from, measure_to = start + args.warmup, start + args.warmup + args.seconds
    before, servers0 = load(), server_cpu_seconds()
    procs = [ctx.Process(target=_floor_process, args=(measure_to, out))
             for _ in range(processes)]
    for proc in procs:
        proc.start()
    results = [out.get() for _ in procs]
    for proc in procs:
        proc.join()
    done = [item for items, _cpu in results for item in items]
    runs = max(len(done), 1)
    inside = [took for at, took in done if measure_from <= at <= measure_to]
    cpu = sum(cpu for _items, cpu in results)
    return (len(inside) / args.seconds, inside or [float("nan")], before, load(), cpu, runs,
            servers_per_run(servers0, runs))


def drive_peer(args: argparse.Namespace) -> tuple:
    """The same drive against ag-ui-langgraph's endpoint, tuned as in bench/agui_peer.py
    (one process, the graph run inside the request, on the same database)."""
    import signal

    from bench.agui_peer import start_peer

    proc, url = start_peer(tuned=True)
    try:
        before, servers0, bench0 = load(), server_cpu_seconds(), time.process_time()
        cpu0 = cpu_seconds([proc.pid])
        count, seconds, took, runs = asyncio.run(drive(
            url, "", args.clients, args.seconds, args.warmup, path="/dev/", first=PEER_FIRST))
        cpu, runs = cpu_seconds([proc.pid]) - cpu0, max(runs, 1)
        return (count / seconds, took or [float("nan")], before, load(), cpu, runs,
                servers_per_run(servers0, runs), (time.process_time() - bench0) / runs)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--configs", default="1x8,2x8,1x2,peer,floor2,floor4",
                        help="worker processes x slots each, to try in turn (1x8 = make run); "
                             "peer: ag-ui-langgraph's endpoint, tuned (bench/agui_peer.py); "
                             "floorN: LangGraph + PostgresSaver alone in N processes")
    parser.add_argument("--phases", action="store_true",
                        help="also log per-phase timings (agentsite.timing) and print their "
                             "breakdown; off by default, as in production: the log's own "
                             "work would count in the CPU per run")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    token = token_issue(user=user, name="bench", scopes="admin")[1]
    connection.close()

    rows = []
    peer = None
    floors = []
    for config in args.configs.split(","):
        empty_run_tables()  # each configuration from the same state (they run one by one)
        if config == "peer":
            peer = drive_peer(args)
            continue
        if config.startswith("floor"):
            floors.append((int(config[5:]), drive_floor(args, int(config[5:]))))
            continue
        workers, slots = (int(n) for n in config.split("x"))
        with Stack(f"agentsite-bench-{os.getpid()}-{config}", workers=workers,
                   concurrency=slots,
                   env=None if args.phases else {"AGENTSITE_TIMING_LOG": ""}) as stack:
            timing.configure(str(stack.timing_log) if args.phases else "")
            before, servers0 = load(), server_cpu_seconds()
            pids = [proc.proc.pid for proc in stack.procs]
            web_pid = stack.procs[-1].proc.pid
            cpu0, web0, bench0 = cpu_seconds(pids), cpu_seconds([web_pid]), time.process_time()
            count, seconds, took, runs = asyncio.run(
                drive(stack.base_url, token, args.clients, args.seconds, args.warmup))
            # CPU per run over the whole drive (warm-up and tail included): product, clients.
            cpu = (cpu_seconds(pids) - cpu0, cpu_seconds([web_pid]) - web0,
                   time.process_time() - bench0)
            servers = servers_per_run(servers0, max(runs, 1))
            after = load()
            timing.configure("")
            rows.append((workers, stack.concurrency, count / seconds, took, before, after,
                         stack.timing_log, cpu, runs, servers))
    print(f"\n{args.clients} concurrent clients, full dev runs over /agui/dev/ "
          f"(start + 4 resumes), {args.seconds:.0f} s window after {args.warmup:.0f} s warm-up")
    print(f"{'worker processes':<18}{'slots each':>11}{'runs/s':>9}{'run p50':>10}"
          f"{'run p99':>10}   load")
    for workers, slots, rate, took, before, after, _log, _cpu, _runs, _servers in rows:
        took = took or [float("nan")]
        print(f"{workers:<18}{slots:>11}{rate:>9.1f}{percentile(took, 50) * 1000:>8.0f}ms"
              f"{percentile(took, 99) * 1000:>8.0f}ms   {before} before, {after} after")
    print("CPU time per full run (all runs of the drive, warm-up included):")
    for workers, slots, _rate, _took, _b, _a, _log, cpu, runs, servers in rows:
        product, web, clients = cpu
        print(f"  {workers} worker(s) x {slots} slots: web + workers "
              f"{product / runs * 1000:.0f} ms "
              f"(web {web / runs * 1000:.0f}), bench clients {clients / runs * 1000:.0f} ms, "
              f"{servers} ({os.cpu_count()} CPUs give at most "
              f"{os.cpu_count() / (product / runs):.0f} runs/s to the product alone)")
    if peer is not None:
        rate, took, before, after, cpu, runs, servers, clients = peer
        print(f"peer, tuned (one uvicorn process, the graph in it): {rate:.1f} runs/s, "
              f"run p50 {percentile(took, 50) * 1000:.0f}ms p99 "
              f"{percentile(took, 99) * 1000:.0f}ms, CPU per run {cpu / runs * 1000:.0f} ms, "
              f"bench clients {clients * 1000:.0f} ms, {servers}; "
              f"{before} before, {after} after")
    for processes, (rate, took, before, after, cpu, runs, servers) in floors:
        print(f"floor, {processes} processes (LangGraph + PostgresSaver alone, no HTTP): "
              f"{rate:.1f} runs/s, run p50 {percentile(took, 50) * 1000:.0f}ms p99 "
              f"{percentile(took, 99) * 1000:.0f}ms, CPU per run {cpu / runs * 1000:.0f} ms, "
              f"{servers}; {before} before, {after} after")
    print("target: >= 40 runs/s with 20 clients, one web + one worker process")
    if rows and args.phases:
        _timing.print_breakdown(rows[0][6], f"{rows[0][0]} worker x {rows[0][1]} slots, "
                                f"{args.clients} clients")


if __name__ == "__main__":
    main()
