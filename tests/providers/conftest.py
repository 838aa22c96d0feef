"""Runs on a real chat model provider: our fake OpenAI-compatible server
(tests/providers/fake_openai.py) in this process, and a web process + Celery worker of
their own with ``AGENT_MODEL=openai:gpt-4o-mini`` pointed at it, on the suite's test
database (the session's ``services`` run the offline model).

Short model settings keep a retry or a timeout within a second or a few:
``PROVIDER_ENV``. The fake server is reset before each test (no fault, no script,
nothing recorded, hangs released).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest
from django.conf import settings

from agentsite.processes import web_started, worker_process
from tests.providers.fake_openai import FakeProvider

PROVIDER_QUEUE = f"agentsite-providers-{os.getpid()}"
MODEL = "openai:gpt-4o-mini"
# A hung call gives up after MODEL_TIMEOUT_SECONDS (a read timeout: the fake server's
# 'stall' outlasts it, for the fencing test); no SDK retry, so each failure the fake
# server scripts is one segment attempt; three run-level retries half a second on.
PROVIDER_ENV = {
    "AGENT_MODEL": MODEL, "OPENAI_API_KEY": "test",
    "MODEL_TIMEOUT_SECONDS": "2", "MODEL_MAX_RETRIES": "0", "MODEL_RUN_RETRIES": "3",
    "MODEL_RETRY_BACKOFF_SECONDS": "0.5", "MODEL_RETRY_BACKOFF_MAX_SECONDS": "2",
    # The worker's reaper looks often: a run due for its next attempt starts quickly.
    "SWEEP_SECONDS": "0.3",
}
# Statuses in which the worker may still be busy with a run (or about to be).
BUSY = ("queued", "running", "resuming", "retrying")


@pytest.fixture(scope="session")
def fake_provider() -> Iterator[FakeProvider]:
    provider = FakeProvider().start()
    yield provider
    provider.stop()


@pytest.fixture
def provider(fake_provider: FakeProvider) -> Iterator[FakeProvider]:
    """The fake server, fresh for this test."""
    fake_provider.reset()
    yield fake_provider
    fake_provider.release()


@pytest.fixture(scope="package")
def provider_services(django_db_setup, django_db_blocker, tmp_path_factory,
                      fake_provider: FakeProvider) -> Iterator[dict]:
    """A worker and a web process on the provider, with their own Celery queue."""
    from tests.conftest import _database_url

    log_dir = tmp_path_factory.mktemp("provider-logs")
    env = {**os.environ, "DATABASE_URL": _database_url(), "REDIS_URL": settings.REDIS_URL,
           "CELERY_QUEUE": PROVIDER_QUEUE, "AGENTSITE_EMBEDDED": "1", "PYTHONUNBUFFERED": "1",
           # The suite's test agents and the provider adopter agent (catalog.py here).
           "AGENTSITE_AGENT_MODULES": ",".join([*settings.AGENTSITE_AGENT_MODULES,
                                                "tests.agent_catalog",
                                                "tests.providers.catalog"]),
           # LangChain reads OPENAI_API_BASE before the SDK's OPENAI_BASE_URL: both ours.
           "OPENAI_BASE_URL": fake_provider.base_url, "OPENAI_API_BASE": fake_provider.base_url,
           **PROVIDER_ENV}
    worker = worker_process(PROVIDER_QUEUE, env, log_dir,
                            name=f"providers-{uuid.uuid4().hex[:8]}@%h")
    with django_db_blocker.unblock():
        worker.start()
        web, port = web_started(env, log_dir)  # on another port if its port was taken
    try:
        yield {"worker": worker, "web": web, "env": env,
               "base_url": f"http://127.0.0.1:{port}"}
    finally:
        fake_provider.release()
        web.stop()
        worker.stop()
        from execution.checkpointer import close_checkpointer

        close_checkpointer()  # tests read threads; its pool would keep the database open


@pytest.fixture
def plive(provider_services, transactional_db, provider, request) -> Iterator[dict]:
    """The provider services for one test; afterwards, the worker done with its runs and
    every run's published events valid AG-UI (as the suite's ``live``)."""
    yield provider_services
    from runs.models import AgentRun

    provider.release()  # a hung call answers, so its segment can end
    deadline = time.monotonic() + 30
    while AgentRun.objects.filter(status__in=BUSY).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if request.node.get_closest_marker("agui_unchecked") is None:
        from tests.helpers import validate_published

        validate_published(AgentRun.objects.values_list("id", flat=True))


@pytest.fixture
def papi(plive, users) -> Iterator[Callable[[str | None], httpx.Client]]:
    """papi("owner") → an httpx client on the provider web process, by token."""
    clients: list[httpx.Client] = []

    def make(who: str | None = "owner") -> httpx.Client:
        headers = {"Authorization": f"Token {users[who + '_token']}"} if who else {}
        client = httpx.Client(base_url=plive["base_url"], headers=headers, timeout=30)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()
