"""Recovery times of `make run`'s supervision and of the embedded servers (printed, not
asserted): a fully embedded launcher in a temporary data dir, then

- the worker SIGKILLed → a new worker says " ready."
- the embedded Redis SIGKILLed → the launcher has it back on its port
- the embedded Postgres SIGKILLed → back on its port
- SIGTERM → everything stopped.

Run: .venv/bin/python bench/recovery.py
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait(log: Path, pattern: str, count: int = 1, timeout: float = 300) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.findall(pattern, log.read_text(errors="replace"))
        if len(found) >= count:
            return found
        time.sleep(0.05)
    sys.exit(f"timeout waiting for {pattern!r}:\n{log.read_text()[-3000:]}")


def _until(check, timeout: float = 120) -> float:  # noqa: ANN001
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            sys.exit("timeout")
        time.sleep(0.02)
    return time.monotonic() - start


def main() -> None:
    data = Path(tempfile.mkdtemp(prefix="agentsite-recovery-"))
    log = data / "launch.log"
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "AGENTSITE_EMBEDDED")}
    env.update(AGENTSITE_DATA_DIR=str(data), PORT=str(_free_port()), PYTHONUNBUFFERED="1",
               CELERY_QUEUE="agentsite-recovery", WORKER_CONCURRENCY="1")
    with open(log, "w") as out:
        launcher = subprocess.Popen([sys.executable, "-m", "agentsite.launch"], env=env,
                                    cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
    try:
        started = time.monotonic()
        _wait(log, r" ready\.")
        print(f"cold start (initdb, migrate, web + worker): {time.monotonic() - started:.1f} s")

        pid = int(_wait(log, r"started worker \(pid (\d+)\)")[0])
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        _wait(log, r"started worker \(pid (\d+)\)", count=2)
        restarted = time.monotonic() - killed
        _wait(log, r" ready\.", count=2)
        print(f"worker SIGKILL → restarted {restarted:.1f} s, consuming again "
              f"{time.monotonic() - killed:.1f} s")

        redis_port = int((data / "redis" / "port").read_text())
        os.kill(int((data / "redis" / "redis.pid").read_text()), signal.SIGKILL)
        _until(lambda: not _open(redis_port))
        print(f"Redis SIGKILL → serving again on port {redis_port}: "
              f"{_until(lambda: _open(redis_port)):.1f} s")

        pg_port = int((data / "postgres.port").read_text())
        pg_pid = int((data / "postgres" / "postmaster.pid").read_text().split()[0])
        os.kill(pg_pid, signal.SIGKILL)
        _until(lambda: not _open(pg_port))
        print(f"Postgres SIGKILL → serving again on port {pg_port}: "
              f"{_until(lambda: _open(pg_port)):.1f} s")

        stopping = time.monotonic()
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(120)
        print(f"SIGTERM → all stopped: {time.monotonic() - stopping:.1f} s "
              f"(exit {launcher.returncode})")
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
        subprocess.run([sys.executable, "-m", "agentsite.embedded", "stop"], cwd=ROOT,
                       env={**env}, capture_output=True, timeout=120)
    print(f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; log: {log}")


if __name__ == "__main__":
    main()
