"""AG-UI checks used by the tests: every event validates against ag-ui-protocol's
models, and each run follows the protocol's sequence rules."""

from __future__ import annotations

from typing import Any

from ag_ui.core import Event
from pydantic import TypeAdapter

_adapter: TypeAdapter[Any] = TypeAdapter(Event)


def validate_events(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Validate all events; split them into runs and check each run's sequence.

    Rules: a run starts with RUN_STARTED and ends with RUN_FINISHED or RUN_ERROR;
    nothing comes after its end; every text message, tool call and step opened in
    a run is closed before RUN_FINISHED; ids match their openers; no step starts
    while one of its name is open.
    """
    for event in events:
        _adapter.validate_python(event)
    runs: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] | None = None
    for event in events:
        kind = event["type"]
        if current is None:
            assert kind == "RUN_STARTED", f"event outside a run: {event}"
            current = [event]
            continue
        assert kind != "RUN_STARTED", "RUN_STARTED inside an unfinished run"
        current.append(event)
        if kind in ("RUN_FINISHED", "RUN_ERROR"):
            _check_run(current)
            runs.append(current)
            current = None
    assert current is None, f"run never finished: {[e['type'] for e in current]}"
    return runs


def _check_run(run: list[dict[str, Any]]) -> None:
    texts: set[str] = set()
    tools: set[str] = set()
    steps: list[str] = []
    for event in run[1:-1]:
        kind = event["type"]
        if kind == "TEXT_MESSAGE_START":
            assert event["messageId"] not in texts, "text message started twice"
            texts.add(event["messageId"])
        elif kind == "TEXT_MESSAGE_CONTENT":
            assert event["messageId"] in texts, "content for a message not started"
        elif kind == "TEXT_MESSAGE_END":
            texts.remove(event["messageId"])
        elif kind == "TOOL_CALL_START":
            tools.add(event["toolCallId"])
        elif kind == "TOOL_CALL_ARGS":
            assert event["toolCallId"] in tools, "args for a tool call not started"
        elif kind == "TOOL_CALL_END":
            tools.remove(event["toolCallId"])
        elif kind == "STEP_STARTED":
            # As @ag-ui/client: a step is known by its name, which is unique while open.
            assert event["stepName"] not in steps, f"step {event['stepName']} is already active"
            steps.append(event["stepName"])
        elif kind == "STEP_FINISHED":
            assert event["stepName"] in steps, f"step {event['stepName']} finished, never started"
            steps.remove(event["stepName"])
    if run[-1]["type"] == "RUN_FINISHED":
        assert not texts and not tools and not steps, (
            f"open at RUN_FINISHED: texts={texts} tools={tools} steps={steps}")
