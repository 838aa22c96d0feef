"""Polls on the suite's worker and web process, for tests that stop the worker or wait for
a stream: each returns as soon as its condition holds, within a generous cap (the machine
may be busy)."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from prometheus_client.parser import text_string_to_metric_families

from agentsite.celery import app as celery_app

WORKER_CAP_SECONDS = 30.0


def until(check: Callable[[], bool], what: str, seconds: float = WORKER_CAP_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.05)


def unacked_tasks() -> int:
    """Tasks delivered to a worker and not yet acknowledged (acks_late: until they end),
    in the broker's hash of unacknowledged deliveries (kombu's Redis ``unacked_key``)."""
    with celery_app.connection_for_read() as conn:
        channel = conn.default_channel
        return channel.client.hlen(channel.unacked_key)


def queued_tasks(queue: str) -> int:
    """Tasks waiting in ``queue`` (kombu's Redis list of that name: tasks sent with no
    priority)."""
    with celery_app.connection_for_read() as conn:
        return conn.default_channel.client.llen(queue)


def wait_tasks_done(queue: str) -> None:
    """Until ``queue`` is empty and no delivered task is unacknowledged: what was sent to
    it has run to its end."""
    until(lambda: queued_tasks(queue) == 0 and unacked_tasks() == 0,
          f"the tasks of {queue} done")


def wait_worker_acked() -> None:
    """Until every delivered task was acknowledged: a worker stopped then requeues nothing
    it already did (beat's short sweeps come and go; a moment without any is enough)."""
    until(lambda: unacked_tasks() == 0, "the worker acknowledged its tasks")


def open_streams(client: httpx.Client, surface: str) -> float:
    """``agentsite_open_streams`` of ``surface`` (agui, run, queue) across the web processes."""
    text = client.get("/metrics").text
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples
               if s.name == "agentsite_open_streams" and s.labels.get("surface") == surface)
