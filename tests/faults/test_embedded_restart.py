"""The embedded Postgres and Redis come back on the port they had, so running processes
(web, worker) reconnect with the URL they started with.

Each test starts its own servers in a temporary data dir; the suite's servers are not touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import redis

ROOT = Path(__file__).resolve().parents[2]


def _embedded(data_dir: Path, code: str) -> str:
    """Run `code` with agentsite.embedded imported on `data_dir`; return its last line."""
    result = subprocess.run(
        [sys.executable, "-c", f"from agentsite import embedded as e; {code}"],
        env={**os.environ, "AGENTSITE_DATA_DIR": str(data_dir)}, cwd=ROOT,
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""


def _wait_dead(pid: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} still alive")


def test_redis_comes_back_on_its_port(tmp_path):
    url = _embedded(tmp_path, "print(e.ensure_redis())")
    client = redis.Redis.from_url(url, socket_timeout=5)
    try:
        client.set("kept", "yes")
        client.execute_command("BGREWRITEAOF")  # on disk before the crash
        time.sleep(0.5)
        pid = int((tmp_path / "redis" / "redis.pid").read_text())
        os.kill(pid, signal.SIGKILL)  # a crash, not a clean stop
        _wait_dead(pid)
        again = _embedded(tmp_path, "print(e.ensure_redis())")
        assert again == url
        # The client made before the restart reconnects on its own with the same URL.
        assert client.get("kept") == b"yes"
    finally:
        client.close()
        _embedded(tmp_path, "e.stop_redis()")


def test_postgres_comes_back_on_its_port(tmp_path):
    url = _embedded(tmp_path, "print(e.ensure_postgres())")
    try:
        port = urlparse(url).port
        assert (tmp_path / "postgres.port").read_text() == str(port)
        pid = int((tmp_path / "postgres" / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGKILL)
        _wait_dead(pid)
        again = _embedded(tmp_path, "print(e.ensure_postgres())")
        assert again == url
        with psycopg.connect(url, connect_timeout=10) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        _embedded(tmp_path, "e.stop_postgres()")


def test_a_taken_port_moves_to_a_free_one(tmp_path):
    import socket

    url = _embedded(tmp_path, "print(e.ensure_redis())")
    _embedded(tmp_path, "e.stop_redis()")
    port = urlparse(url).port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        moved = _embedded(tmp_path, "print(e.ensure_redis())")
    try:
        assert urlparse(moved).port != port
        assert (tmp_path / "redis" / "port").read_text() == str(urlparse(moved).port)
    finally:
        _embedded(tmp_path, "e.stop_redis()")
