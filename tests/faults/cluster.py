"""Our own web and worker processes for the fault tests, on the test database, with a
short lease so that recovery takes seconds (they are killed and restarted at will).

Separate from the suite's `services` so a test may kill them, point them at its own
Redis, or run two of each.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import redis
from django.conf import settings

from agentsite.processes import Process, stop_all, web_started, worker_process

# Short in tests: a lapsed lease is found within ~LEASE + SWEEP seconds.
RECOVERY_ENV = {"LEASE_SECONDS": "2", "SWEEP_SECONDS": "0.3", "REQUEUE_AFTER_SECONDS": "2"}


def _database_url() -> str:
    from tests.conftest import _database_url as url

    return url()


def _services_worker_log() -> str:
    from tests.conftest import services_worker_log

    return services_worker_log()


class Cluster:
    """Factory of web / worker processes sharing one queue and environment."""

    def __init__(self, log_dir: Path, redis_url: str | None = None, **extra: str) -> None:
        self.queue = f"agentsite-faults-{uuid.uuid4().hex[:8]}"
        self.log_dir = log_dir
        self.env = {**os.environ, "DATABASE_URL": _database_url(),
                    "REDIS_URL": redis_url or settings.REDIS_URL, "CELERY_QUEUE": self.queue,
                    "AGENTSITE_EMBEDDED": "1", "PYTHONUNBUFFERED": "1", "AGENT_MODEL": "",
                    "AGENTSITE_AGENT_MODULES": ",".join([
                        *settings.AGENTSITE_AGENT_MODULES, "tests.agent_catalog"]),
                    **RECOVERY_ENV, **extra}
        self.processes: list[Process] = []
        self.stopping = threading.Event()
        self.restarts: list[float] = []
        self.services_seen = len(_services_worker_log())  # its earlier tests' lines

    def worker(self, name: str = "worker", supervised: bool = False) -> Process:
        """A worker; ``supervised``: started again whenever it exits, as the launcher
        (`make run`) and docker-compose (restart policy) do."""
        proc = worker_process(self.queue, self.env, self.log_dir,
                              name=f"{name}-{uuid.uuid4().hex[:6]}@%h")
        proc.name = name
        self.processes.append(proc)
        proc.start()
        if supervised:
            threading.Thread(target=self._supervise, args=(proc,), daemon=True).start()
        return proc

    def _supervise(self, proc: Process) -> None:
        while not self.stopping.wait(0.2):
            if proc.proc is not None and proc.proc.poll() is not None:
                self.restarts.append(time.time())
                try:
                    proc.start()
                except RuntimeError:
                    pass  # try again on the next look

    def web(self, name: str = "web") -> tuple[Process, str]:
        proc, port = web_started(self.env, self.log_dir, name=name)
        self.processes.append(proc)
        return proc, f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.stopping.set()
        stop_all(reversed(self.processes))

    def logs(self) -> str:
        """The cluster's logs, and the suite's own worker's: its reaper sweeps the same
        database, so it may hand a cluster run's lapsed segment to itself before a cluster
        worker does (it did, in 2 full runs of 6). Only its lines since this cluster
        started."""
        return "\n".join([*(path.read_text(errors="replace")
                            for path in sorted(self.log_dir.glob("*.log"))),
                          _services_worker_log()[self.services_seen:]])


def cluster_fixture(transactional_db, tmp_path) -> Iterator[callable]:
    """``cluster(**env)`` → a new Cluster; all stopped at the end. A test module uses it
    as ``cluster = pytest.fixture(name="cluster")(cluster_fixture)``."""
    made: list[Cluster] = []

    def make(**kwargs: str) -> Cluster:
        c = Cluster(tmp_path, **kwargs)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()
    from execution.checkpointer import close_checkpointer

    close_checkpointer()


def client(base_url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Token {token}"},
                        timeout=30)


def call_log(thread_id: str) -> list[tuple[str, str]]:
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    return [(e["event"], e["node"]) for e in
            map(json.loads, r.lrange(f"calls:{thread_id}", 0, -1))]


def effects(thread_id: str) -> list[str]:
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    return [x.decode() for x in r.lrange(f"effects:{thread_id}", 0, -1)]


def wait_all(check, timeout: float, interval: float = 0.1):
    """Poll ``check()`` until it returns a truthy value; return it, or fail at timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not done after {timeout}s")
        time.sleep(interval)
