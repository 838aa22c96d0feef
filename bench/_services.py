"""Start a web server (uvicorn) and a Celery worker for a benchmark, on the configured DB.

The processes are started the way the test suite starts them (``agentsite.processes``).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from agentsite.processes import ROOT, Process, free_port, healthy, web_process, worker_process

__all__ = ["ROOT", "Stack", "free_port", "percentile", "report", "wait_healthy"]


class Stack:
    def __init__(self, queue: str, concurrency: int = 2) -> None:
        from django.conf import settings

        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "DATABASE_URL": os.environ["DATABASE_URL"],
                    "REDIS_URL": settings.REDIS_URL, "CELERY_QUEUE": queue,
                    "AGENTSITE_EMBEDDED": os.environ.get("AGENTSITE_EMBEDDED", "0")}
        self.queue, self.concurrency = queue, concurrency
        self.logs = Path(tempfile.mkdtemp(prefix="agentsite-bench-"))
        self.procs: list[Process] = []

    def __enter__(self) -> Stack:
        self.procs = [
            worker_process(self.queue, self.env, self.logs, concurrency=self.concurrency,
                           loglevel="WARNING"),
            web_process(self.port, self.env, self.logs, log_level="warning"),
        ]
        for proc in self.procs:
            proc.start()
        time.sleep(2)  # let the worker connect to the broker
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
