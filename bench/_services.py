"""Start a web server (uvicorn) and a Celery worker for a benchmark, on the configured DB."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
        self.procs: list[subprocess.Popen] = []

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "w")
        proc = subprocess.Popen(argv, env=self.env, cwd=ROOT, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def __enter__(self) -> Stack:
        py = sys.executable
        self._spawn("worker", [py, "-m", "celery", "-A", "agentsite", "worker", "-Q", self.queue,
                               "--concurrency", str(self.concurrency), "--loglevel", "WARNING",
                               "--without-mingle", "--without-gossip"])
        self._spawn("web", [py, "-m", "uvicorn", "agentsite.asgi:application", "--host",
                            "127.0.0.1", "--port", str(self.port), "--no-access-log",
                            "--log-level", "warning"])
        wait_healthy(self.base_url, self.logs)
        time.sleep(2)  # let the worker connect to the broker
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def wait_healthy(base_url: str, logs: Path, timeout: float = 60) -> None:
    """Wait until a web server we started answers /healthz."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
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
