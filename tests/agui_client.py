"""A minimal AG-UI HTTP client for the tests: POST a body, read the SSE answer."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from tests.agui_rules import validate_events


def run_input(thread_id: str | None = None, **extra: Any) -> dict[str, Any]:
    """A RunAgentInput in its camelCase wire form."""
    return {"threadId": thread_id or str(uuid.uuid4()), "runId": str(uuid.uuid4()),
            "state": {}, "messages": [], "tools": [], "context": [], "forwardedProps": {},
            **extra}


def post_events(client: httpx.Client, path: str, body: dict[str, Any],
                headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """POST and return the streamed events; the stream must be 200 text/event-stream."""
    with client.stream("POST", path, json=body,
                       headers={"Accept": "text/event-stream", **(headers or {})}) as r:
        if r.status_code != 200:
            r.read()
            raise AssertionError(f"{path}: {r.status_code} {r.text}")
        assert r.headers["content-type"].startswith("text/event-stream"), r.headers
        events = []
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[len("data: "):]))
    return events


def run_segment(client: httpx.Client, agent: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """One AG-UI run: its events, validated, with the client's ids on start and end."""
    events = post_events(client, f"/agui/{agent}/", body)
    (run,) = validate_events(events)
    for event in (run[0], run[-1]):
        if event["type"] in ("RUN_STARTED", "RUN_FINISHED"):
            assert event["threadId"] == body["threadId"], event
            assert event["runId"] == body["runId"], event
    return run


def interrupts(run: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = run[-1].get("outcome") or {}
    assert outcome.get("type") == "interrupt", run[-1]
    return outcome["interrupts"]


def resume(thread_id: str, interrupt_id: str, payload: Any = None,
           status: str = "resolved") -> dict[str, Any]:
    entry: dict[str, Any] = {"interruptId": interrupt_id, "status": status}
    if status == "resolved":
        entry["payload"] = payload
    return run_input(thread_id, resume=[entry])
