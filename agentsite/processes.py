"""Starting our own processes (web server, Celery worker, beat, Pushpin, the edge
forwarder), waiting until they serve, and stopping them with everything they started.

Shared by ``make run``'s supervisor (agentsite/launch.py), the test suite
(tests/conftest.py) and the benchmarks (bench/), so all three run the product the same way.

Each process starts in a session of its own, and no process of that session outlives it:
when it exits (or is killed) the rest of its session is killed too (``end_session``). A
uvicorn with ``--workers`` keeps its workers in its session, and Pushpin's runner its
services (each in a process group of its own, but not a session): killed alone, they
would go on holding the port.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import httpx

from agentsite.ports import PortTaken, free_port, held_by, port_taken, retry_taken_ports

ROOT = Path(__file__).resolve().parent.parent
__all__ = ["PortTaken", "free_port", "retry_taken_ports"]  # with the names defined here


def worker_argv(queue: str | None, *, concurrency: int = 2, loglevel: str = "INFO",
                name: str | None = None, peers: bool = False) -> list[str]:
    """A Celery worker on ``queue`` (None: the settings' default queue). ``peers``: sync
    with other workers at start and gossip with them (Celery's default; off for the test
    suite's short-lived workers, which start faster without)."""
    argv = [sys.executable, "-m", "celery", "-A", "agentsite", "worker",
            "--concurrency", str(concurrency), "--loglevel", loglevel]
    argv += ["-Q", queue] if queue else []
    argv += [] if peers else ["--without-mingle", "--without-gossip"]
    return argv + (["-n", name] if name else [])


def beat_argv(schedule: str | None, *, loglevel: str = "INFO") -> list[str]:
    """Celery beat: sends the periodic tasks of CELERY_BEAT_SCHEDULE (the deadline sweep).
    ``schedule``: its state file (None: the settings' ``CELERY_BEAT_SCHEDULE_FILENAME``)."""
    argv = [sys.executable, "-m", "celery", "-A", "agentsite", "beat", "--loglevel", loglevel]
    return argv + (["--schedule", schedule] if schedule else [])


# A stopping web process cuts its open streams after this long (uvicorn waits for them
# for ever otherwise); clients reconnect with Last-Event-ID to another process.
GRACEFUL_SHUTDOWN_SECONDS = 5


def web_argv(port: int, *, host: str = "127.0.0.1", workers: int = 1,
             log_level: str = "info") -> list[str]:
    """uvicorn serving the product; ``workers`` > 1: that many processes of its own
    sharing its socket (the kernel spreads connections over them)."""
    argv = [sys.executable, "-m", "uvicorn", "agentsite.asgi:application", "--host", host,
            "--port", str(port), "--no-access-log", "--log-level", log_level,
            "--timeout-graceful-shutdown", str(GRACEFUL_SHUTDOWN_SECONDS)]
    return argv + (["--workers", str(workers)] if workers > 1 else [])


def metrics_dir(env: dict[str, str], directory: Path) -> Path:
    """Set ``PROMETHEUS_MULTIPROC_DIR`` in ``env`` (for the web, worker and beat processes
    started with it) to ``directory``, emptied: prometheus-client's multiprocess files of
    one launch, summed by ``/metrics`` (a previous launch's would count twice). A
    directory given in the environment already is kept as it is."""
    if env.get("PROMETHEUS_MULTIPROC_DIR"):
        return Path(env["PROMETHEUS_MULTIPROC_DIR"])
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
    return directory


def healthy(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def session_members(sid: int) -> list[int]:
    """Live processes (zombies left out: they hold nothing) of session ``sid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def end_session(sid: int, timeout: float = 10) -> list[int]:
    """Kill (SIGKILL) every process left in session ``sid`` and wait until none is alive,
    so what they held (a listening socket) is free. Returns the ones killed. A session's
    id is its first process's, which the kernel does not hand out again while the
    session has a member."""
    killed: list[int] = []
    if not Path("/proc").is_dir():  # not Linux: its process group is what can be found
        try:
            os.killpg(sid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return killed
    deadline = time.monotonic() + timeout
    while members := session_members(sid):
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            if pid not in killed:
                killed.append(pid)
        if time.monotonic() > deadline:
            raise RuntimeError(f"session {sid}: {members} still alive after SIGKILL")
        time.sleep(0.05)
    return killed


PR_SET_PDEATHSIG = 1  # linux/prctl.h


@functools.cache
def _prctl() -> Callable[..., int]:
    return ctypes.CDLL(None, use_errno=True).prctl  # looked up before a fork, not after


def _die_with(parent: int) -> None:
    """In a new child, before it runs its program (Popen's ``preexec_fn``): SIGTERM it
    when ``parent`` exits, however it exits (Linux: PR_SET_PDEATHSIG); if the parent is
    gone already, end now."""
    _prctl()(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


class Process:
    """A child process of ours, in a session of its own, with its log (``log_dir``; None:
    our own output), started and stopped on demand. ``die_with_parent``: it gets SIGTERM
    when the process that started it exits, even by SIGKILL (Linux; only for a starter
    without threads, as ``make run``'s supervisor: a ``preexec_fn`` is not safe with
    threads)."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_dir: Path | None,
                 ready: Callable[[Process], bool] = lambda p: True, *,
                 die_with_parent: bool = False) -> None:
        self.name, self.argv, self.env, self.ready = name, argv, env, ready
        self.log_dir = log_dir
        self.die_with_parent = die_with_parent
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        assert self.log_dir is not None, f"{self.name} logs to our own output"
        return self.log_dir / f"{self.name}-{self.starts}.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def spawn(self) -> None:
        """Start it in a session of its own, without waiting until it is ready."""
        self.starts += 1
        handle = open(self.log_path, "w") if self.log_dir is not None else None
        dies_with_parent = self.die_with_parent and sys.platform == "linux"
        if dies_with_parent:
            _prctl()
        try:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, cwd=ROOT, stdout=handle,
                stderr=subprocess.STDOUT if handle else None, start_new_session=True,
                preexec_fn=functools.partial(_die_with, os.getpid())
                if dies_with_parent else None)
        finally:
            if handle is not None:
                handle.close()  # the child has its own copy

    def start(self, timeout: float = 60) -> None:
        """Spawn it and wait until it is ready. ``PortTaken`` when it could not listen on
        a port it was given (its log says so, or its ``ready`` found the port another
        process's): it is stopped then, for a start on fresh ports (``retry_taken_ports``)."""
        self.spawn()
        deadline = time.monotonic() + timeout
        try:
            while not self.ready(self):
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited early:\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} not ready after {timeout}s:\n"
                                       f"{self.log_tail()}")
                time.sleep(0.1)
        except RuntimeError as exc:
            self.wait(timeout=0)  # what it started is gone too (it may be half up)
            if isinstance(exc, PortTaken) or port_taken(self.log_tail()):
                raise PortTaken(f"{self.name}: {exc}") from exc
            raise

    def log_tail(self) -> str:
        return self.log()[-4000:] if self.log_dir is not None else ""

    def holds_port(self, port: int) -> bool:
        """Whether a process of its session listens on ``port`` (not another's)."""
        return self.proc is not None and held_by(port, session_members(self.proc.pid))

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        if self.signal(sig):
            self.wait(timeout)

    def signal(self, sig: int = signal.SIGTERM, *, group: bool = True) -> bool:
        """Send ``sig`` to the process group (``group=False``: to the process alone, which
        then stops its own children: a Celery worker's warm shutdown); False when it is
        not running."""
        if self.proc is None or self.proc.poll() is not None:
            return False
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        return True

    def wait(self, timeout: float = 30) -> None:
        """Wait for the exit, SIGKILL after ``timeout`` seconds; then kill what is left of
        its session."""
        if self.proc is None:
            return
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        end_session(self.proc.pid)


def stop_all(processes: Iterable[Process], sig: int = signal.SIGTERM,
             timeout: float = 30, *, group: bool = True) -> None:
    """Stop them together: each is signalled before any is waited for, so their graceful
    shutdowns (a worker's warm stop, uvicorn's open streams) overlap."""
    signalled = [process for process in processes if process.signal(sig, group=group)]
    for process in signalled:
        process.wait(timeout)


def worker_process(queue: str, env: dict[str, str], log_dir: Path, **kwargs: object) -> Process:
    """A Celery worker on ``queue``, ready once it says so in its log."""
    return Process("worker", worker_argv(queue, **kwargs), env, log_dir,  # type: ignore[arg-type]
                   ready=lambda p: " ready." in p.log())


def web_process(port: int, env: dict[str, str], log_dir: Path, **kwargs: object) -> Process:
    """uvicorn serving the product on ``port``, ready once /healthz answers 200."""
    return Process("web", web_argv(port, **kwargs), env, log_dir,  # type: ignore[arg-type]
                   ready=lambda p: healthy(f"http://127.0.0.1:{port}"))


def web_started(env: dict[str, str], log_dir: Path, *, name: str = "web",
                **kwargs: object) -> tuple[Process, int]:
    """uvicorn (``web_process``) started and ready on a fresh port, and that port; on
    another one when the port chosen was taken before uvicorn bound it."""
    def start() -> tuple[Process, int]:
        port = free_port()
        web = web_process(port, env, log_dir, **kwargs)
        web.name = name
        web.start()
        return web, port

    return retry_taken_ports(start)


def beat_process(env: dict[str, str], log_dir: Path, **kwargs: object) -> Process:
    """Celery beat with its schedule file in ``log_dir``, ready once it says it started."""
    argv = beat_argv(str(log_dir / "celerybeat-schedule"), **kwargs)  # type: ignore[arg-type]
    return Process("beat", argv, env, log_dir, ready=lambda p: "beat: Starting" in p.log())


# --- The edge: Pushpin in front of the web processes (docs/scaling.md) -------------------

PUSHPIN_BIN = "/usr/bin/pushpin"
PUSHPIN_TEMPLATE = ROOT / "deploy" / "pushpin" / "pushpin.conf"


def pushpin_installed() -> bool:
    return Path(PUSHPIN_BIN).exists()


def pushpin_config(directory: Path, *, http_port: int, publish_port: int, sig_key: str,
                   targets: list[int], host: str = "127.0.0.1", push_port: int = 0,
                   settings: dict[str, str] | None = None) -> Path:
    """Write Pushpin's configuration and routes in ``directory`` from the repo's
    (deploy/pushpin/): its own ports (``push_port``: its ZeroMQ publish input,
    ``zmq_push_uri``; the other ZeroMQ ports free ones), run and log directories and
    key, routing to the web processes on ``targets`` in that order. ``settings``: other
    keys of the file replaced (the bench's ``log_level``, ``debug``)."""
    (directory / "run").mkdir(parents=True, exist_ok=True)
    (directory / "log").mkdir(exist_ok=True)
    values = {
        "rundir": str(directory / "run"), "ipc_prefix": f"pushpin-{http_port}-",
        "http_port": f"{host}:{http_port}" if host != "0.0.0.0" else str(http_port),
        "logdir": str(directory / "log"),
        "routesfile": str(directory / "routes"), "sig_key": sig_key,
        "push_in_spec": zmq_push_uri(push_port or free_port()),
        "push_in_sub_specs": f"tcp://127.0.0.1:{free_port()}",
        "push_in_http_port": str(publish_port),
        "command_spec": f"tcp://127.0.0.1:{free_port()}",
        # No rate limit on deliveries (0): with one, Pushpin 1.36 delivers in 25 ms
        # batches once busy (its RateLimiter), measured as +25 ms per event here.
        "message_rate": "0", "message_hwm": "1000000",
        **(settings or {}),
    }
    lines = []
    for line in PUSHPIN_TEMPLATE.read_text().splitlines():
        key = line.split("=", 1)[0]
        lines.append(f"{key}={values[key]}" if "=" in line and key in values else line)
    conf = directory / "pushpin.conf"
    conf.write_text("\n".join(lines) + "\n")
    (directory / "routes").write_text(
        "* " + " ".join(f"127.0.0.1:{port}" for port in targets) + "\n")
    return conf


def grip_url(publish_port: int, sig_key: str) -> str:
    """GRIP_URL for a Pushpin whose publish endpoint is on ``publish_port``."""
    return f"http://127.0.0.1:{publish_port}/?iss=pushpin&key={sig_key}"


def zmq_push_uri(push_port: int) -> str:
    """GRIP_ZMQ_PUSH_URI for a Pushpin whose ZeroMQ publish input is on ``push_port``."""
    return f"tcp://127.0.0.1:{push_port}"


def pushpin_argv(conf: Path) -> list[str]:
    return [PUSHPIN_BIN, "--config", str(conf), "--merge-output"]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def pushpin_process(conf: Path, http_port: int, publish_port: int, env: dict[str, str],
                    log_dir: Path) -> Process:
    """Pushpin with the configuration ``pushpin_config`` wrote, ready once its publish
    endpoint accepts connections and a request through it reaches a web process (its
    proxy refuses requests with a 502 until its own HTTP client is connected)."""
    return Process("pushpin", pushpin_argv(conf), env, log_dir,
                   ready=lambda p: _pushpin_ready(p, http_port, publish_port))


def _pushpin_ready(process: Process, http_port: int, publish_port: int) -> bool:
    if not (_answers(publish_port) and healthy(f"http://127.0.0.1:{http_port}")):
        return False
    # Pushpin's handler does not fail when its publish port is taken: it logs nothing and
    # another process answers there (seen: a listener bound between free_port and Pushpin).
    if not process.holds_port(publish_port):
        raise PortTaken(f"port {publish_port} is another process's")
    return True


def edge_argv() -> list[str]:
    return [sys.executable, "-m", "streams.edge"]


def edge_process(env: dict[str, str], log_dir: Path) -> Process:
    """The edge forwarder (streams/edge.py; env with GRIP_URL), ready once subscribed."""
    return Process("edge", edge_argv(), env, log_dir,
                   ready=lambda p: "edge forwarder: subscribed" in p.log())


def children_of(pid: int) -> list[int]:
    """Process ids whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def crash(process: Process) -> None:
    """Kill ``process`` and everything it started at once (SIGKILL), as a machine failure
    would."""
    if process.proc is None or process.proc.poll() is not None:
        return
    end_session(process.proc.pid)
    process.wait()
