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
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"web server did not start; logs in {self.logs}")
            time.sleep(0.1)
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


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]
