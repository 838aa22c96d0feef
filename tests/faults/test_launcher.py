"""`make run`'s launcher supervises web and worker: a killed worker is restarted (with the
web untouched) and only SIGTERM / Ctrl-C stops everything."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection

from agentsite.launch import backoff
from agentsite.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def _database_url() -> str:
    d = connection.settings_dict
    auth = d["USER"] + (f":{d['PASSWORD']}" if d["PASSWORD"] else "")
    return f"postgresql://{auth}@{d['HOST']}:{d['PORT']}/{d['NAME']}"


def _wait_for(log: Path, pattern: str, timeout: float = 120, count: int = 1,
              proc: subprocess.Popen | None = None) -> list[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.findall(pattern, log.read_text(errors="replace"))
        if len(found) >= count:
            return found
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} x{count} in {timeout}s:\n"
                         f"{log.read_text(errors='replace')[-4000:]}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie is dead for our purpose.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def start_launcher(tmp_path: Path, port: int, **extra: str) -> tuple[subprocess.Popen, Path]:
    """``python -m agentsite.launch`` (what ``make run`` runs) on the test database and
    Redis, serving on ``port``, with ``extra`` environment; its output goes to the log."""
    env = {**os.environ, "DATABASE_URL": _database_url(), "REDIS_URL": settings.REDIS_URL,
           "CELERY_QUEUE": f"agentsite-launch-{uuid.uuid4().hex[:8]}", "PORT": str(port),
           "SECRET_KEY": "launcher-test", "WORKER_CONCURRENCY": "1", "PYTHONUNBUFFERED": "1",
           "LAUNCH_BACKOFF_FIRST": "0.5",
           "CELERY_BEAT_SCHEDULE_FILENAME": str(tmp_path / "celerybeat-schedule"), **extra}
    env.pop("AGENTSITE_EMBEDDED", None)
    log = tmp_path / "launch.log"
    with open(log, "w") as out:
        launcher = subprocess.Popen([sys.executable, "-m", "agentsite.launch"], env=env,
                                    cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
    return launcher, log


def test_backoff_doubles_up_to_the_cap():
    assert [backoff(n, first=1, cap=30) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]


@pytest.mark.django_db(transaction=True)
def test_killed_worker_is_restarted_and_sigterm_stops_all(tmp_path):
    port = free_port()
    launcher, log = start_launcher(tmp_path, port)
    try:
        _wait_for(log, r" ready\.", proc=launcher)  # the Celery worker
        web_pid = int(_wait_for(log, r"started web \(pid (\d+)\)")[0])
        worker_pid = int(_wait_for(log, r"started worker \(pid (\d+)\)")[0])

        os.kill(worker_pid, signal.SIGKILL)
        _wait_for(log, rf"worker \(pid {worker_pid}\) exited with -9 .*restarting in")
        pids = _wait_for(log, r"started worker \(pid (\d+)\)", count=2)
        assert int(pids[1]) != worker_pid and _alive(int(pids[1]))
        _wait_for(log, r" ready\.", count=2)  # the new worker is consuming again
        # The web server was left alone and still answers.
        assert _alive(web_pid)
        assert re.findall(r"started web \(pid (\d+)\)", log.read_text()) == [str(web_pid)]
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code < 500:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-4000:]
            time.sleep(0.3)

        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=60) == 0
        assert "stopped." in log.read_text()
        assert not _alive(web_pid) and not _alive(int(pids[1]))
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait(10)
