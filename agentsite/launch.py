"""`make run`: embedded services if needed, migrate, demo user, then web + worker + beat
under a supervisor; with EDGE=pushpin also Pushpin in front of the web processes
(WEB_PROCESSES workers of one uvicorn) and the edge forwarder (docs/scaling.md). A child
that dies is restarted with exponential backoff (and logged); the embedded servers, when
used, are watched and restarted on their port the same way.
Each child is an ``agentsite.processes.Process``: in a session of its own, whose other
members (uvicorn's workers, Pushpin's services) are killed as soon as it exits, so none
outlives it and a restart gets its port back; and each gets SIGTERM when the supervisor
exits, even by SIGKILL (and stops what it started in turn).
Only Ctrl-C / SIGTERM stops everything.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from agentsite import embedded, processes
from agentsite.processes import Process

log = logging.getLogger("agentsite.launch")

# Restart delays: 1 s, 2 s, 4 s … capped; a child that ran this long counts as healthy again.
BACKOFF_FIRST = float(os.environ.get("LAUNCH_BACKOFF_FIRST", "1"))
BACKOFF_MAX = float(os.environ.get("LAUNCH_BACKOFF_MAX", "30"))
STABLE_SECONDS = 30.0
STOP_GRACE_SECONDS = 30.0
EMBEDDED_CHECK_SECONDS = 2.0


def backoff(failures: int, first: float = BACKOFF_FIRST, cap: float = BACKOFF_MAX) -> float:
    """Delay before restart number `failures + 1` of a child that keeps dying."""
    return min(cap, first * (2 ** failures))


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # on top of the supervisor's
    process: Process | None = None  # while it runs
    started_at: float = 0.0
    failures: int = 0  # exits in a row, each after less than STABLE_SECONDS
    restart_at: float = 0.0


@dataclass
class Supervisor:
    """Keeps its children running until `stop()`; restarts each with backoff when it dies."""

    env: dict[str, str]
    children: list[Child]
    # Embedded servers to keep up: name → (is it running?, start it).
    services: dict[str, tuple[Callable[[], bool], Callable[[], object]]] = field(
        default_factory=dict)
    stopping: bool = False

    def _start(self, child: Child) -> None:
        # In its own session (its leftovers killed when it exits), and gone with us: no
        # child outlives the supervisor, even a supervisor killed with SIGKILL.
        child.process = Process(child.name, child.argv, {**self.env, **child.env}, None,
                                die_with_parent=True)
        child.process.spawn()
        child.started_at = time.monotonic()
        log.info("started %s (pid %s)", child.name, child.process.proc.pid)

    def _check_child(self, child: Child, now: float) -> None:
        if child.process is None:
            if now >= child.restart_at:
                self._start(child)
            return
        pid, code = child.process.proc.pid, child.process.proc.poll()
        if code is None:
            return
        try:
            killed = processes.end_session(pid)
        except RuntimeError:  # one stuck in the kernel: its restart may find the port taken
            log.exception("%s (pid %s): what it left would not die", child.name, pid)
            killed = []
        if killed:  # uvicorn's workers, Pushpin's services: they would hold the port
            log.warning("%s (pid %s) left %d processes behind; killed them: %s",
                        child.name, pid, len(killed), " ".join(map(str, killed)))
        ran = now - child.started_at
        if ran >= STABLE_SECONDS:
            child.failures = 0
        delay = backoff(child.failures)
        child.failures += 1
        log.warning("%s (pid %s) exited with %s after %.1fs; restarting in %.0fs (restart #%d)",
                    child.name, pid, code, ran, delay, child.failures)
        child.process, child.restart_at = None, now + delay

    def _check_services(self) -> None:
        for name, (running, start) in self.services.items():
            if running():
                continue
            log.warning("embedded %s is down; starting it again on its port", name)
            try:
                start()
                log.info("embedded %s is back", name)
            except Exception:  # noqa: BLE001 - keep supervising; the next check retries
                log.exception("embedded %s did not start", name)

    def stop(self, signum: int = 0, frame: object = None) -> None:
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGINT, self.stop)
        signal.signal(signal.SIGTERM, self.stop)
        for child in self.children:
            self._start(child)
        next_service_check = time.monotonic() + EMBEDDED_CHECK_SECONDS
        while not self.stopping:
            now = time.monotonic()
            for child in self.children:
                self._check_child(child, now)
            if self.services and now >= next_service_check:
                self._check_services()
                next_service_check = time.monotonic() + EMBEDDED_CHECK_SECONDS
            time.sleep(0.2)
        self._stop_children()
        return 0

    def _stop_children(self) -> None:
        # Each child stops its own (a warm Celery shutdown, uvicorn's workers); what is left
        # of a session after its first process exits, or STOP_GRACE_SECONDS, is killed.
        processes.stop_all([c.process for c in self.children if c.process is not None],
                           timeout=STOP_GRACE_SECONDS, group=False)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s launch: %(message)s",
                        stream=sys.stderr)
    env = dict(os.environ)
    services: dict[str, tuple[Callable[[], bool], Callable[[], object]]] = {}
    # The embedded servers for the URLs not given; the children get the URLs in their env
    # (and AGENTSITE_EMBEDDED=1 when both are embedded: the local default, settings.py).
    provided = embedded.ensure_env(env)
    if "postgres" in provided:
        services["Postgres"] = (embedded.postgres_running, embedded.ensure_postgres)
        print(f"embedded Postgres: {env['DATABASE_URL']}  (data in {embedded.PG_DIR})")
    if "redis" in provided:
        services["Redis"] = (embedded.redis_running, embedded.ensure_redis)
        print(f"embedded Redis:    {env['REDIS_URL']}  (data in {embedded.REDIS_DIR})")
    py = sys.executable
    host, port = env.get("HOST", "127.0.0.1"), env.get("PORT", "8000")
    processes.metrics_dir(env, embedded.DATA_DIR / "metrics")  # emptied: this launch's

    def manage(*args: str) -> None:
        subprocess.run([py, "manage.py", *args], env=env, check=True)

    manage("migrate", "--noinput")
    manage("collectstatic", "--noinput", "-v", "0")
    manage("ensure_demo_user")

    edge = edge_children(env, host, int(port))
    web = Child("web", processes.web_argv(edge.web_port,
                                          host="127.0.0.1" if edge.children else host,
                                          workers=edge.web_processes),
                # Behind Pushpin a web process holds no stream: 5 connections serve the
                # 100 requests it may have in flight (docs/scaling.md).
                env={"DB_POOL_MAX": env.get("DB_POOL_MAX", "5")} if edge.children else {})
    supervisor = Supervisor(env=env, services=services, children=[
        web, *edge.children,
        Child("worker", processes.worker_argv(
            None, concurrency=int(env.get("WORKER_CONCURRENCY", "8")), peers=True)),
        # Sends the periodic deadline / escalation sweep (CELERY_BEAT_SCHEDULE).
        Child("beat", processes.beat_argv(None)),
    ])
    print(f"\nagentsite is up: http://{host}:{port}/admin/  ·  API: http://{host}:{port}/api/"
          "\nCtrl-C stops web, worker, beat and the embedded services.\n", flush=True)
    try:
        return supervisor.run()
    finally:
        embedded.stop_started()
        print("stopped.", flush=True)


@dataclass
class Edge:
    web_port: int
    web_processes: int = 1
    children: list[Child] = field(default_factory=list)


def edge_children(env: dict[str, str], host: str, port: int) -> Edge:
    """EDGE=pushpin: Pushpin on HOST:PORT in front of WEB_PROCESSES web processes on the
    next port, and the edge forwarder; GRIP_URL (with a fresh key) and GRIP_ZMQ_PUSH_URI
    go into ``env``. The web processes are one uvicorn's workers sharing its socket, so
    the kernel spreads Pushpin's connections over them: Pushpin tries its targets in
    order, it does not balance (uvicorn restarts a worker that dies). Otherwise one web
    process on HOST:PORT, holding its streams itself."""
    edge = env.get("EDGE", "").strip().lower()
    if not edge:
        return Edge(web_port=port)
    if edge != "pushpin":
        sys.exit(f"EDGE={edge!r}: the only edge is 'pushpin'")
    if not processes.pushpin_installed():
        sys.exit("EDGE=pushpin, but Pushpin is not installed (Debian: apt-get install pushpin)")
    count = int(env.get("WEB_PROCESSES", "2"))
    web_port = port + 1
    publish_port = int(env.get("GRIP_PUBLISH_PORT", "5561"))
    push_port = int(env.get("GRIP_PUSH_PORT", "5560"))
    key = secrets.token_hex(16)
    conf = processes.pushpin_config(processes.ROOT / ".data" / "pushpin", http_port=port,
                                    publish_port=publish_port, sig_key=key,
                                    targets=[web_port], host=host, push_port=push_port)
    env["GRIP_URL"] = processes.grip_url(publish_port, key)
    env["GRIP_ZMQ_PUSH_URI"] = processes.zmq_push_uri(push_port)
    print(f"edge: Pushpin on {host}:{port} in front of {count} web processes on "
          f"{web_port}; publish endpoints 127.0.0.1:{publish_port} (HTTP) and "
          f"127.0.0.1:{push_port} (ZeroMQ, the forwarder's)")
    return Edge(web_port=web_port, web_processes=count, children=[
        Child("pushpin", processes.pushpin_argv(conf)),
        Child("edge", processes.edge_argv())])


if __name__ == "__main__":
    sys.exit(main())
