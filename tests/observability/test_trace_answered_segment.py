"""One answered interrupt gives one connected trace, from the POST that answers it to
the next pause: the web request, the task message (its context in the message's
headers), the worker's task, the graph's nodes, and the Postgres and Redis calls.

Spans are collected by the SDK's InMemorySpanExporter, so both ends run in this test's
process: the requests through Django's test client, the segment's task by a Celery
worker started here (``celery.contrib.testing.worker``) consuming the queue the task is
sent to, through Redis, as the real worker would; the message crosses the broker."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import connections
from django.test import Client
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from agentsite.celery import app as celery_app
from execution.checkpointer import close_checkpointer
from observability import tracing
from runs.models import AgentRun
from tests.accounts import make_token, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def traced(transactional_db, unconsumed_queue) -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.configure(provider)
    # The worker thread's connections, closed after each task: the test database is
    # dropped at the end of the session.
    task_postrun.connect(close_connections)
    try:
        with start_worker(celery_app, pool="solo", perform_ping_check=False,
                          queues=[unconsumed_queue]):
            yield exporter
    finally:
        task_postrun.disconnect(close_connections)
        tracing.unconfigure()
        close_checkpointer()


def close_connections(**_: object) -> None:
    connections.close_all()


def paused_at(run_id: str, segments: int) -> AgentRun:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        run = AgentRun.objects.get(pk=run_id)
        if run.status == "paused" and run.segments == segments:
            return run
        assert run.status not in ("failed", "completed"), run.error
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} not paused after segment {segments}")


def test_an_answer_is_one_trace_from_the_post_to_the_next_pause(traced):
    owner = make_user("owner", "owner@example.com")
    client = Client(headers={"Authorization": f"Token {make_token(owner)}"})
    started = client.post("/api/runs/", {"agent": "dev", "input": {"topic": "t"}},
                          content_type="application/json")
    assert started.status_code == 201, started.content
    run_id = started.json()["id"]
    run = paused_at(run_id, 1)
    interrupt_id = run.interrupts.get().interrupt_id
    (start,) = [s for s in traced.get_finished_spans()
                if s.kind == SpanKind.SERVER and s.attributes.get("http.method") == "POST"]
    assert start.attributes[tracing.ATTR_RUN] == run_id
    traced.clear()

    answered = client.post(f"/api/runs/{run_id}/resume/",
                           {"interrupt_id": interrupt_id, "payload": {"value": "Apollo"}},
                           content_type="application/json")
    assert answered.status_code == 202, answered.content
    paused_at(run_id, 2)
    time.sleep(0.2)  # the task span ends after the pause commits

    spans = traced.get_finished_spans()
    (post,) = [s for s in spans if s.kind == SpanKind.SERVER and "resume" in s.name]
    assert post.parent is None
    assert post.attributes[tracing.ATTR_RUN] == run_id
    assert post.attributes[tracing.ATTR_INTERRUPT] == (interrupt_id,)
    assert post.attributes[tracing.ATTR_USER] == str(owner.pk)
    trace = [s for s in spans if s.context.trace_id == post.context.trace_id]
    ids = {s.context.span_id for s in trace}
    # Connected: every span of the trace but the POST hangs under another of it.
    assert all(s.parent.span_id in ids for s in trace if s is not post)

    names = [s.name for s in trace]
    (task,) = [s for s in trace if s.name == "run/runs.tasks.run_execute"]
    assert task.kind == SpanKind.CONSUMER
    assert task.attributes[tracing.ATTR_RUN] == run_id
    assert task.attributes[tracing.ATTR_SEGMENT] == 2
    assert [e.name for e in task.events] == ["agentsite.pause"]
    assert any(s.kind == SpanKind.PRODUCER for s in trace)  # the message, sent on commit
    assert "graph LangGraph" in names or any(n.startswith("graph ") for n in names), names
    assert "node ask_color" in names, names  # the node that paused with the next question
    assert any(s.attributes.get("db.system") == "postgresql" for s in trace)
    assert any(s.attributes.get("db.system") == "redis" for s in trace)
    # The graph's spans are the task's: under it, with the run and segment named.
    node = next(s for s in trace if s.name == "node ask_color")
    assert node.attributes[tracing.ATTR_SEGMENT] == 2
