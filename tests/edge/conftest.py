"""The edge topology: Pushpin in front of two web processes, two Celery workers, the
session's Postgres and Redis, and the edge forwarder (streams/edge.py).

Pushpin is Debian's package (`make test` installs it); without it these tests skip.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest

from agentsite.processes import (
    Process,
    edge_process,
    free_port,
    grip_url,
    pushpin_config,
    pushpin_installed,
    pushpin_process,
    retry_taken_ports,
    stop_all,
    web_argv,
    worker_process,
    zmq_push_uri,
)
from tests.conftest import QUEUE

WATCH_SECONDS = "2"


def _web(name: str, port: int, env: dict[str, str], log_dir) -> Process:
    return Process(name, web_argv(port), env, log_dir,
                   ready=lambda p: _healthy(f"http://127.0.0.1:{port}"))


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


# Package scope: stopped after tests/edge. Its worker takes tasks from the suite's queue
# and its reaper sweeps the suite's database; alive for the rest of the session it took
# the main worker's tasks (a test that stops the main worker to hold a run, a test that
# reads the main worker's log for an email) and re-sent other stacks' runs.
@pytest.fixture(scope="package")
def edge(services, tmp_path_factory, django_db_blocker) -> Iterator[dict]:
    if not pushpin_installed():
        pytest.skip("pushpin is not installed (make test installs it)")
    log_dir = tmp_path_factory.mktemp("edge")
    with django_db_blocker.unblock():
        # A port taken between its choice and Pushpin's bind (another test process):
        # the whole topology again, on fresh ports.
        stack = retry_taken_ports(lambda: _start_edge(services, log_dir))
    try:
        yield stack
    finally:
        stop_all(reversed(stack["started"]))


def _start_edge(services: dict, log_dir) -> dict:
    key = secrets.token_hex(16)
    http_port, publish_port, push_port = free_port(), free_port(), free_port()
    web_ports = [free_port(), free_port()]
    # A held stream confirms a lost run end 2 s after its first look (5 s by default).
    # The forwarder pushes over ZeroMQ, as make run's does (test_edge_publish: HTTP).
    env = {**services["env"], "GRIP_URL": grip_url(publish_port, key),
           "GRIP_ZMQ_PUSH_URI": zmq_push_uri(push_port), "STREAM_WATCH_SECONDS": WATCH_SECONDS}
    conf = pushpin_config(log_dir / "pushpin", http_port=http_port, publish_port=publish_port,
                          sig_key=key, targets=web_ports, push_port=push_port)
    pushpin = pushpin_process(conf, http_port, publish_port, env, log_dir)
    forwarder = edge_process(env, log_dir)
    webs = [_web(f"web{i + 1}", port, env, log_dir) for i, port in enumerate(web_ports)]
    worker2 = worker_process(QUEUE, env, log_dir, name=f"edge-{uuid.uuid4().hex[:8]}@%h")
    worker2.name = "worker2"
    started: list[Process] = []
    try:
        for process in (*webs, pushpin, forwarder, worker2):
            started.append(process)  # stopped even if it never gets ready
            process.start()
    except BaseException:
        stop_all(reversed(started))
        raise
    return {"pushpin": pushpin, "forwarder": forwarder, "webs": webs, "worker2": worker2,
            "port": http_port, "base_url": f"http://127.0.0.1:{http_port}",
            "web_ports": web_ports, "env": env, "started": started}


@pytest.fixture
def via_edge(edge, live, users) -> Iterator[Callable[[str | None], httpx.Client]]:
    """via_edge("owner") → an httpx client talking to Pushpin, authenticated by token."""
    clients: list[httpx.Client] = []

    def make(who: str | None = "owner") -> httpx.Client:
        headers = {"Authorization": f"Token {users[who + '_token']}"} if who else {}
        client = httpx.Client(base_url=edge["base_url"], headers=headers, timeout=30)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
