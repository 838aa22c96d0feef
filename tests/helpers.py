"""Helpers shared by the tests: waiting on runs, answering, reading published events."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import redis
from django.conf import settings

from streams.keys import EVENT_TTL_SECONDS, counter_key, event_key, run_channel
from streams.publish import wait_published

FINAL = {"completed", "rejected", "blocked", "failed", "cancelled"}


def wait_run(client: httpx.Client, run_id: str, until: set[str] | str,
             timeout: float = 30) -> dict[str, Any]:
    """Poll the run until its status is in ``until``; fail with the last state otherwise."""
    wanted = {until} if isinstance(until, str) else until
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = client.get(f"/api/runs/{run_id}/").json()
        if body.get("status") in wanted:
            return body
        if body.get("status") in FINAL:
            break
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not reach {wanted}: {body}")


def start_run(client: httpx.Client, agent: str = "dev", **body: Any) -> dict[str, Any]:
    response = client.post("/api/runs/", json={"agent": agent, **body})
    assert response.status_code == 201, response.text
    return response.json()


def pending(run: dict[str, Any]) -> dict[str, Any]:
    assert len(run["pending_interrupts"]) == 1, run
    return run["pending_interrupts"][0]


def answer(client: httpx.Client, run: dict[str, Any], payload: Any) -> httpx.Response:
    return client.post(f"/api/runs/{run['id']}/resume/",
                       json={"interrupt_id": pending(run)["interrupt_id"], "payload": payload})


def answer_and_wait(client: httpx.Client, run: dict[str, Any], payload: Any,
                    until: set[str] | str = frozenset({"paused"} | FINAL)) -> dict[str, Any]:
    response = answer(client, run, payload)
    assert response.status_code == 202, response.text
    return wait_run(client, run["id"], until)


def counter_ttl(run_id: str) -> int:
    """Seconds until the run's event counter expires: -1 never, -2 no counter."""
    wait_published()
    return redis.Redis(**settings.EVENTSTREAM_REDIS).ttl(counter_key(run_channel(run_id)))


def counter_expires_with_events(run_id: str) -> bool:
    """The run's counter expires, and within the stored events' 24 h."""
    return 0 < counter_ttl(run_id) <= EVENT_TTL_SECONDS


def published_events(run_id: str) -> list[dict[str, Any]]:
    """The AG-UI events the worker published on the run's channel, in order."""
    wait_published()  # this thread's publishes (a test calling the services) are stored
    r = redis.Redis(**settings.EVENTSTREAM_REDIS)
    channel = run_channel(run_id)
    count = int(r.get(counter_key(channel)) or 0)
    events = []
    for i in range(1, count + 1):
        raw = r.get(event_key(channel, i))
        assert raw is not None, f"event {i} of {channel} missing"
        data = json.loads(raw)["data"]
        events.append(json.loads(data) if isinstance(data, str) else data)
    return events


def validate_published(run_ids: Any, settle_seconds: float = 3) -> None:
    """Every run's published events are valid AG-UI (tests/agui_rules.py). A segment's
    end is published just after its commit: a test that saw the run paused may get here
    before its events are stored, so each run gets ``settle_seconds`` to be valid."""
    from tests.agui_rules import validate_events

    for run_id in run_ids:
        settled = time.monotonic() + settle_seconds
        while True:
            try:
                validate_events(published_events(str(run_id)))
                break
            except AssertionError as err:
                if time.monotonic() > settled:
                    raise AssertionError(f"AG-UI events of run {run_id}: {err}") from None
                time.sleep(0.1)



def run_async(coro: Any) -> Any:
    """``asyncio.run(coro)`` in a thread of its own: a browser test that ran earlier in this
    process (pytest-playwright's sync API) leaves this thread inside a running event loop,
    where ``asyncio.run`` refuses to start (the suite's processes mix tests in any order)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def paused_with(owner: Any, requests: list[tuple[str, Any]]) -> Any:
    """A dev run of ``owner`` paused on ``requests`` ((interrupt id, value) pairs) without a
    worker: for tests of the answer services on their own (no segment claims it)."""
    from django.db import transaction

    from hitl import lifecycle
    from runs.models import AgentRun
    from runs.services import run_start

    run = run_start(owner=owner, agent="dev", input={"topic": "x"})
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().get(pk=run.pk)
        locked.status = AgentRun.Status.PAUSED
        locked.segments = 1
        locked.save(update_fields=["status", "segments"])
        lifecycle.interrupts_open(run=locked, requests=requests)
    return run
