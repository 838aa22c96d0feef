"""Relay one run's published AG-UI events from Redis to an HTTP response.

The run channel is followed by ``streams.follow`` (stored events, then live, each once,
in id order). Nothing here touches Postgres: callers pass a short ``check_status``
callback for the watchdog.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import BaseEvent

from runs.models import AgentRun
from streams.follow import KEEPALIVE, ChannelEvents
from streams.keys import run_channel

TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
_TYPE_FIRST = '{"type":"'


@dataclass(frozen=True, slots=True)
class Wire:
    """A published event as the JSON it was stored with: what ag-ui-protocol's
    EventEncoder writes after ``data:`` (``streams.publish.wire``), so it is relayed
    as is, without a round trip through its pydantic class."""

    type: str
    data: str

    @classmethod
    def of(cls, data: Any) -> Wire:
        if not isinstance(data, str):  # not from our publisher: JSON it as is
            data = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        # Our publisher's JSON starts with the type (``type`` is the events' first field;
        # event types have no escapes): read it there instead of parsing every event,
        # snapshots included, on the event loop.
        if data.startswith(_TYPE_FIRST):
            end = data.find('"', len(_TYPE_FIRST))
            kind = data[len(_TYPE_FIRST):end]
            if end > 0 and kind.isupper() and kind.replace("_", "").isalpha():
                return cls(kind, data)
        return cls(json.loads(data)["type"], data)

    def with_ids(self, **ids: str) -> str:
        """The JSON with ``threadId`` / ``runId`` replaced (``thread_id=``, ``run_id=``)."""
        body = json.loads(self.data)
        body.update({"threadId": ids["thread_id"], "runId": ids["run_id"]})
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


class RunEvents(ChannelEvents):
    """Stored and live events of one run channel, in id order, each exactly once, as
    ``Wire`` events."""

    def __init__(self, run_id: object) -> None:
        super().__init__(run_channel(run_id))

    def wrap(self, data: str) -> Wire:
        return Wire.of(data)


async def relay_segment(events: RunEvents, *, after: int,
                  check_status: Callable[[], Awaitable[str | None]],
                  started: Callable[[], BaseEvent],
                  lost: Callable[[str], BaseEvent]) -> AsyncIterator[Wire | BaseEvent | object]:
    """One AG-UI run (a segment of our run): from the first RUN_STARTED after ``after``
    to its RUN_FINISHED / RUN_ERROR. Yields published events (``Wire``), the events
    ``started()`` / ``lost()`` made here, and KEEPALIVE markers.

    A RUN_ERROR with no RUN_STARTED before it (the run failed before the worker began
    the segment) gets a ``started()`` event in front. If the run stops being live
    and no end arrives (watchdog, two quiet checks), ends with ``lost(status)``.
    """
    open_run = False
    strikes = 0
    async for item in events.follow(after=after):
        if item is KEEPALIVE:
            yield KEEPALIVE
            continue
        if item is None:
            status = await check_status()
            strikes = strikes + 1 if status not in AgentRun.LIVE else 0
            if strikes >= 2:
                if not open_run:
                    yield started()
                yield lost(status or "gone")
                return
            continue
        strikes = 0
        _, event = item
        kind = event.type
        if not open_run:
            if kind == "RUN_STARTED":
                open_run = True
                yield event
            elif kind == "RUN_ERROR":
                yield started()
                yield event
                return
            continue  # the tail of an earlier segment
        yield event
        if kind in TERMINAL:
            return
