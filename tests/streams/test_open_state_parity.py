"""What an AG-UI run left open, read twice: by the event store's cancel script
(``streams.storage.SEND_LUA``, ``open_run``) and by its Python twin
(``agui.open_state.open_run``), over the same event logs in the real Redis. Both find
the same open run and close the same things in the same order; the relay watchdog and
takeover recovery close with the same reader."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any

import pytest
import redis
import redis.asyncio
from django.conf import settings

from agui.events import (
    run_error,
    run_finished_success,
    run_started,
    step_finished,
    step_started,
    text_content,
    text_start,
    tool_call_args,
    tool_call_end,
    tool_call_start,
)
from agui.mapper import EventMapper
from agui.open_state import READ_BATCH, open_run, read_back, read_back_async
from agui.relay import RunWatch, Wire
from execution.recovery import reopen
from streams.keys import counter_key, event_key, run_channel
from streams.publish import wire
from streams.storage import OPEN_RUN_CAP, send_args
from tests.helpers import run_async

IDS = {"thread_id": "t", "run_id": "r"}


class CountingRedis(redis.Redis):
    """A client that counts its round trips."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.calls += 1
        return super().execute_command(*args, **options)


@pytest.fixture
def client() -> CountingRedis:
    return CountingRedis(**settings.EVENTSTREAM_STORAGE_CONNECTION)


def store(client: redis.Redis, events: list[Any]) -> str:
    """A fresh run channel holding ``events`` (ids 1..n); returns its name."""
    channel = run_channel(uuid.uuid4())
    if events:
        client.execute_command(*send_args({channel: [wire(e) for e in events]}))
    return channel


def lua_closes(client: redis.Redis, channel: str) -> list[tuple[str, str]] | None:
    """What the store's failure end (fence op ``end``) writes before its RUN_ERROR: the
    closers of the open run as (type, id), or None when it found no open run (then it
    keeps the standalone end's RUN_STARTED)."""
    before = int(client.get(counter_key(channel)) or 0)
    (last,) = client.execute_command(*send_args(
        {channel: [wire(run_started(**IDS)), wire(run_error(message="x", code="x"))]},
        fences={channel: ("end", "")}))
    written = [json.loads(json.loads(client.get(event_key(channel, i)))["data"])
               for i in range(before + 1, last + 1)]
    assert written[-1]["type"] == "RUN_ERROR"
    if written[0]["type"] == "RUN_STARTED":
        assert len(written) == 2
        return None
    return [_named(e) for e in written[:-1]]


def py_closes(client: redis.Redis, channel: str) -> list[tuple[str, str]] | None:
    state = open_run(channel, client=client)
    return None if state is None else [_named(json.loads(wire(e))) for e in state.closers()]


def _named(event: dict[str, Any]) -> tuple[str, str]:
    return event["type"], event.get("messageId") or event.get("toolCallId") or event["stepName"]


# Parallel steps (two nodes of one superstep) and parallel tool calls, a text message
# left open, one of each closed on the way.
PARALLEL = [run_started(**IDS), step_started("plan"), text_start("m1"),
            text_content("m1", "Hel"), step_started("tools"), step_started("search"),
            tool_call_start("c1", "lookup", "m1"), tool_call_start("c2", "fetch", "m1"),
            tool_call_start("c3", "fetch", "m1"), tool_call_args("c2", "{}"),
            tool_call_end("c2"), step_finished("plan"), text_content("m1", "lo")]
PARALLEL_CLOSES = [("TEXT_MESSAGE_END", "m1"), ("TOOL_CALL_END", "c1"),
                   ("TOOL_CALL_END", "c3"), ("STEP_FINISHED", "tools"),
                   ("STEP_FINISHED", "search")]
FINISHED = [run_started(**IDS), step_started("a"), step_finished("a"),
            run_finished_success(**IDS, result={})]

CASES = {
    "parallel steps, tool calls, an open message": (PARALLEL, PARALLEL_CLOSES),
    "a run finished": (FINISHED, None),
    "a run that failed": ([run_started(**IDS), step_started("a"),
                           run_error(message="x", code="x")], None),
    "an open run after a finished one": (
        [*FINISHED, run_started(**IDS), text_start("m2"), step_started("b")],
        [("TEXT_MESSAGE_END", "m2"), ("STEP_FINISHED", "b")]),
    "an open run with nothing open": ([run_started(**IDS), step_started("a"),
                                       step_finished("a")], []),
    "no run started": ([step_started("a")], None),
    "an empty channel": ([], None),
}


@pytest.mark.parametrize("case", CASES)
def test_the_script_and_the_reader_agree(client, case):
    events, expected = CASES[case]
    channel = store(client, events)
    assert py_closes(client, channel) == expected
    assert lua_closes(client, channel) == expected


def test_an_expired_event_hides_the_open_run(client):
    channel = store(client, PARALLEL)
    client.delete(event_key(channel, 3))
    assert py_closes(client, channel) is None
    assert lua_closes(client, channel) is None


@pytest.mark.parametrize(("after_start", "found"), [
    (OPEN_RUN_CAP - 1, True), (OPEN_RUN_CAP, False)])
def test_a_huge_log_is_read_in_batches_up_to_one_cap(client, after_start, found):
    """The RUN_STARTED is found up to OPEN_RUN_CAP events back and not beyond, by both;
    the reader asks Redis once per READ_BATCH events."""
    events = [run_started(**IDS), text_start("m1"),
              *(text_content("m1", ".") for _ in range(after_start - 1))]
    channel = store(client, events)
    client.calls = 0
    assert py_closes(client, channel) == ([("TEXT_MESSAGE_END", "m1")] if found else None)
    # The counter, then batches until the RUN_STARTED (or the cap) is reached.
    assert client.calls == 1 + math.ceil(min(len(events), OPEN_RUN_CAP + 1) / READ_BATCH)
    # Takeover recovery reads the same way: beyond the cap it starts a new AG-UI run.
    reopened = reopen(channel.removeprefix("run-"), thread_id="t", message_id="m1")
    assert [e.type.value for e in reopened.events] == (
        ["TEXT_MESSAGE_END"] if found else ["RUN_STARTED"])
    assert lua_closes(client, channel) == ([("TEXT_MESSAGE_END", "m1")] if found else None)


def test_recovery_and_the_watchdog_close_as_the_script_does(client):
    channel = store(client, PARALLEL)
    reopened = reopen(channel.removeprefix("run-"), thread_id="t", message_id="m1")
    assert [_named(json.loads(wire(e))) for e in reopened.events] == PARALLEL_CLOSES
    assert reopened.published_text == "Hello"
    # The watchdog of a stream that saw the same events bridges to the run's true end
    # with the same closers, in the same order.
    watch = RunWatch()
    for event in PARALLEL:
        watch.saw(Wire.event(event))
    truth = [Wire.event(e) for e in (run_started(**IDS), run_finished_success(**IDS, result={}))]
    bridged = [json.loads(w.data) for w in watch.bridge(truth)]
    assert [_named(e) for e in bridged[:-1]] == PARALLEL_CLOSES
    assert lua_closes(client, channel) == PARALLEL_CLOSES
    # ... and the worker's mapper, for what it opened itself.
    mapper = EventMapper("m1")
    mapper.on_task({"id": "1", "name": "tools"})
    mapper.on_task({"id": "2", "name": "search"})
    assert [_named(json.loads(wire(e))) for e in mapper.close_all()] == [
        ("STEP_FINISHED", "tools"), ("STEP_FINISHED", "search")]


@pytest.mark.parametrize("case", CASES)
def test_a_streams_async_reading_is_the_same(client, case):
    """The SSE stream's watchdog reads back on its own asyncio client: the same events."""
    channel = store(client, CASES[case][0])
    last = int(client.get(counter_key(channel)) or 0)

    async def read() -> list | None:
        async with redis.asyncio.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION) as aclient:
            return await read_back_async(aclient, channel, last=last)

    assert run_async(read()) == read_back(channel, last=last, client=client)
