"""Start a web server (uvicorn) and Celery worker(s) for a benchmark, on the configured DB.

The processes are started the way the test suite starts them (``agentsite.processes``),
with the ``make run`` defaults (threads pool, ``WORKER_CONCURRENCY`` slots, INFO log).
Every Stack writes the per-phase timing log (``agentsite.timing``) to its log folder.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from pathlib import Path

from agentsite.processes import ROOT, Process, free_port, healthy, web_process, worker_process

logging.getLogger("httpx").setLevel(logging.WARNING)  # no line per request in the output

__all__ = ["ROOT", "Stack", "free_port", "load", "percentile", "proc_stat", "report",
           "server_cpu_seconds", "servers_per_run", "wait_healthy"]


def load() -> str:
    """The machine's load averages (1, 5, 15 min) and CPU count, for every printed number."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def proc_stat(pid: int) -> list[str]:
    """A process's /proc stat fields after its name (utime and stime at 11 and 12)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def server_cpu_seconds() -> dict[str, float]:
    """CPU time so far of this machine's Postgres and Redis servers: every process named
    ``postgres`` / ``redis-server``, plus the reaped children of each server's parent
    process (backends that ended), so a delta covers connections opened and closed. Servers
    on another machine count 0; anything else using this machine's servers counts too."""
    tick = os.sysconf("SC_CLK_TCK")
    names = {"postgres": "postgres", "redis-server": "redis"}
    total = dict.fromkeys(names.values(), 0.0)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text().strip()
            if name not in names:
                continue
            fields = proc_stat(int(entry.name))
            parent = (Path("/proc") / fields[1] / "comm").read_text().strip()
        except (FileNotFoundError, ProcessLookupError):
            continue
        ticks = int(fields[11]) + int(fields[12])
        if parent != name:  # the server's main process: its ended children count too
            ticks += int(fields[13]) + int(fields[14])
        total[names[name]] += ticks / tick
    return total


def servers_per_run(before: dict[str, float], runs: int) -> str:
    after = server_cpu_seconds()
    return ", ".join(f"{name} {(after[name] - before[name]) / runs * 1000:.1f} ms"
                     for name in before)


class Stack:
    def __init__(self, queue: str, concurrency: int | None = None, workers: int = 1,
                 env: dict[str, str] | None = None) -> None:
        from django.conf import settings

        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.logs = Path(tempfile.mkdtemp(prefix="agentsite-bench-"))
        self.timing_log = self.logs / "timing.jsonl"
        self.env = {**os.environ, "DATABASE_URL": os.environ["DATABASE_URL"],
                    "REDIS_URL": settings.REDIS_URL, "CELERY_QUEUE": queue,
                    "AGENTSITE_EMBEDDED": os.environ.get("AGENTSITE_EMBEDDED", "0"),
                    "AGENTSITE_TIMING_LOG": str(self.timing_log), **(env or {})}
        self.queue, self.workers = queue, workers
        self.concurrency = concurrency or int(os.environ.get("WORKER_CONCURRENCY", "8"))
        self.procs: list[Process] = []

    def __enter__(self) -> Stack:
        self.procs = [
            *(worker_process(self.queue, self.env, self.logs, concurrency=self.concurrency,
                             loglevel="INFO", name=f"bench{i}-{self.queue}@%h")
              for i in range(self.workers)),
            web_process(self.port, self.env, self.logs, log_level="warning"),
        ]
        for i, proc in enumerate(self.procs[:-1]):
            proc.name = f"worker{i}"
        try:
            for proc in self.procs:
                proc.start()
        except BaseException:
            self.__exit__()  # none of what did start is left behind
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.stop()


def wait_healthy(base_url: str, logs: Path, timeout: float = 60) -> None:
    """Wait until a web server we started answers /healthz."""
    deadline = time.monotonic() + timeout
    while not healthy(base_url):
        if time.monotonic() > deadline:
            raise RuntimeError(f"web server at {base_url} did not start; logs in {logs}")
        time.sleep(0.1)


def report(name: str, samples: list[float], width: int = 28) -> tuple[float, float]:
    """Print and return p50 / p99 in milliseconds of samples in seconds."""
    p50, p99 = percentile(samples, 50) * 1000, percentile(samples, 99) * 1000
    print(f"{name:<{width}} n={len(samples):<4} p50={p50:8.1f} ms   p99={p99:8.1f} ms")
    return p50, p99


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def stock_checkpointer():  # noqa: ANN201
    """LangGraph's PostgresSaver on its own pool with Postgres' defaults (the floor's
    checkpointer: not ours, whose connections commit checkpoint writes asynchronously)."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from execution.checkpointer import conninfo

    pool = ConnectionPool(conninfo(), min_size=1, max_size=4, open=True, kwargs={
        "autocommit": True, "prepare_threshold": 0, "row_factory": dict_row})
    return PostgresSaver(pool)
