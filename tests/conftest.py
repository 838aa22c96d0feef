"""Real parts only: the test database on a real Postgres, a real Redis, a real Celery
worker process and a real ASGI server (uvicorn), all started here for the session.

Tests that talk to the worker or the server use committed data (transactional tests).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
from django.conf import settings
from django.db import connection

from agentsite.celery import app as celery_app
from agentsite.processes import (
    beat_process,
    metrics_dir,
    stop_all,
    web_started,
    worker_process,
)

QUEUE = f"agentsite-test-{os.getpid()}"
# Celery beat of the session's services, once started (see ``no_sweep``).
_BEAT: list = []
_WORKER: list = []


@pytest.fixture(scope="session")
def django_db_modify_db_settings() -> None:
    # One test database per pytest process, so two suites can run side by side.
    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = f"test_agentsite_{os.getpid()}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "agui_unchecked: skip the teardown check of the "
                            "test's published AG-UI events (for tests that break them on purpose)")
    # The flush between transactional tests retries when Postgres picks it as a deadlock
    # victim: agentsite/management/commands/flush.py. The embedded servers are started
    # (and stopped) by tests/embedded_services.py, before settings load.


# Folders whose stack is started once for the package: under xdist (``make test``) all of a
# folder's tests run in one process, which starts that stack once.
_ONE_PROCESS_FOLDERS = ("edge", "providers")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = item.path.relative_to(config.rootpath).parts
        if len(parts) > 2 and parts[0] == "tests" and parts[1] in _ONE_PROCESS_FOLDERS:
            item.add_marker(pytest.mark.xdist_group(parts[1]))


def _database_url() -> str:
    d = connection.settings_dict
    auth = d["USER"] + (f":{d['PASSWORD']}" if d["PASSWORD"] else "")
    return f"postgresql://{auth}@{d['HOST']}:{d['PORT']}/{d['NAME']}"


RUN_WEBHOOK_SECRET = "run-webhook-test-secret"


@pytest.fixture(scope="session")
def services(django_db_setup, django_db_blocker, tmp_path_factory) -> Iterator[dict]:
    """Start a Celery worker and a uvicorn server on the test database."""
    celery_app.conf.task_default_queue = QUEUE
    log_dir = tmp_path_factory.mktemp("logs")
    env = {**os.environ, "DATABASE_URL": _database_url(), "REDIS_URL": settings.REDIS_URL,
           "CELERY_QUEUE": QUEUE, "AGENTSITE_EMBEDDED": "1", "PYTHONUNBUFFERED": "1",
           # Test-only agents (tests/agent_catalog.py: a call log, faults, slow steps,
           # policies), on the offline model.
           "AGENTSITE_AGENT_MODULES": ",".join([*settings.AGENTSITE_AGENT_MODULES,
                                                "tests.agent_catalog"]),
           "AGENT_MODEL": "",
           # Deadlines swept every 0.5 s; webhook retries after 0.2 s, 0.4 s, ….
           "HITL_SWEEP_SECONDS": "0.5", "HITL_WEBHOOK_BACKOFF": "0.2",
           # Signs the LangGraph API's run webhooks (tests/lgapi/test_webhook.py).
           "RUN_WEBHOOK_SECRET": RUN_WEBHOOK_SECRET,
           # Beat's checkpoint sweep every second, but only for runs ended an hour ago:
           # those test_checkpoint_pruning backdates, never a thread a test is reading.
           "CHECKPOINT_PRUNE_SECONDS": "1", "CHECKPOINT_PRUNE_AFTER_SECONDS": "3600",
           # Reviewer presence lapses 4 s after a page stops renewing it (killed tab).
           "PRESENCE_TTL_SECONDS": "4"}
    # Every process's metrics in one place, summed by /metrics (tests/observability).
    metrics_dir(env, tmp_path_factory.mktemp("metrics"))
    worker = worker_process(QUEUE, env, log_dir, name=f"test-{uuid.uuid4().hex[:8]}@%h")
    beat = beat_process(env, log_dir)
    with django_db_blocker.unblock():
        worker.start()
        web, port = web_started(env, log_dir)  # on another port if its port was taken
        beat.start()
    _BEAT.append(beat)
    _WORKER.append(worker)
    try:
        yield {"worker": worker, "web": web, "beat": beat,
               "base_url": f"http://127.0.0.1:{port}", "env": env}
    finally:
        stop_all([beat, web, worker])
        from execution.checkpointer import close_checkpointer

        close_checkpointer()  # its pooled connections would keep the test database open


def services_worker_log() -> str:
    """The session worker's log, when it runs ("" before the first test that starts it)."""
    return _WORKER[0].log() if _WORKER else ""


@pytest.fixture
def no_sweep(django_db_blocker) -> Iterator[None]:
    """Celery beat stopped for one test, so rows past their deadline stay pending (the
    deadline sweep would expire them within 0.5 s); started again afterwards."""
    beat = _BEAT[0] if _BEAT else None
    if beat is not None:
        beat.stop()
        time.sleep(1)  # a sweep already sent expires unrun after 0.5 s (its `expires`)
    yield
    if beat is not None:
        with django_db_blocker.unblock():
            beat.start()


@pytest.fixture
def live(services, transactional_db, request) -> Iterator[dict]:
    yield services
    # Let the worker finish what the test set off before the database is flushed.
    from runs.models import AgentRun

    deadline = time.monotonic() + 60
    busy = ("queued", "running", "resuming")
    while AgentRun.objects.filter(status__in=busy).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    # Every event published on a run's channel during the test is a valid AG-UI 1.0
    # event, and each run follows the protocol's sequence rules (tests/agui_rules.py).
    if request.node.get_closest_marker("agui_unchecked") is None:
        from tests.helpers import validate_published

        validate_published(AgentRun.objects.values_list("id", flat=True))


@pytest.fixture
def unconsumed_queue() -> Iterator[str]:
    """Run tasks sent by this test go to a queue nobody consumes (removed after): a test
    that claims runs itself must not race the session's worker for them."""
    import redis

    before = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue = f"agentsite-test-own-{uuid.uuid4().hex[:8]}"
    yield queue
    celery_app.conf.task_default_queue = before
    redis.Redis(**settings.EVENTSTREAM_REDIS).delete(queue)


@pytest.fixture
def users(transactional_db) -> dict:
    from django.contrib.auth.models import Permission

    from tests.accounts import make_token, make_user

    made = {}
    for name in ("owner", "reviewer", "outsider"):
        user = make_user(name, f"{name}@example.com", "pw-" + name)
        made[name] = user
        made[f"{name}_token"] = make_token(user)  # every scope (tests/security: narrower)
    made["reviewer"].user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    return made


@pytest.fixture
def api(live, users) -> Iterator[Callable[[str | None], httpx.Client]]:
    """api("owner") → an httpx client on the live server authenticated by token."""
    clients: list[httpx.Client] = []

    def make(who: str | None = "owner") -> httpx.Client:
        headers = {"Authorization": f"Token {users[who + '_token']}"} if who else {}
        client = httpx.Client(base_url=live["base_url"], headers=headers, timeout=30)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
