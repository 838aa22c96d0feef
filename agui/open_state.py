"""What an AG-UI run left open, from the events told: the one reader of a run's open state.

The protocol wants every text message, tool call and step closed before the run's
``RUN_FINISHED`` (the official client refuses it otherwise). Whoever ends a run it did not
see through (a taken-over segment, ``execution.recovery``; a stream whose end was lost,
``agui.relay.RunWatch``; the worker's mapper at a segment's end, ``agui.mapper``) closes what is
open with ``closers``, in the one order decided here: text messages, then tool calls,
then steps, each in the order they opened. Steps are one per node and carry only their
name (``agui.mapper``), and @ag-ui/client keeps open steps as a set of names, so no
nesting order is owed; opening order is also what the store's cancel writes.

``RunState`` folds events into that picture; ``read_back`` (``read_back_async`` on a
stream's asyncio client) and ``open_run`` read a channel's event log back to its last
``RUN_STARTED`` or end, in batches, at most ``OPEN_RUN_CAP`` events: for takeover
recovery, and for the streams' watchdogs learning what a resumed client was told
(``streams.sse``, ``streams.grip``). The event store's cancel does the same inside its
script, where it must be atomic with the write (``streams.storage.SEND_LUA``,
``open_run``): the parity test (tests/streams/test_open_state_parity.py) holds the two
together.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio

from agui.events import step_finished, text_end, tool_call_end
from streams.keys import counter_key, event_key
from streams.publish import redis_client
from streams.storage import OPEN_RUN_CAP

ENDS = ("RUN_FINISHED", "RUN_ERROR")
ANCHORS = ("RUN_STARTED", *ENDS)
# Which events open and close what (the state's field, the event's id field).
OPENS = {"TEXT_MESSAGE_START": ("texts", "messageId"),
         "TOOL_CALL_START": ("tools", "toolCallId"), "STEP_STARTED": ("steps", "stepName")}
CLOSES = {"TEXT_MESSAGE_END": ("texts", "messageId"),
          "TOOL_CALL_END": ("tools", "toolCallId"), "STEP_FINISHED": ("steps", "stepName")}
# Stored events read per round trip when reading a log back.
READ_BATCH = 500


def closers(*, texts: Any = (), tools: Any = (), steps: Any = ()) -> list[Any]:
    """The events that close open text messages, tool calls and steps (ids in the order
    they opened), in the one closing order (module docstring)."""
    return [*(text_end(m) for m in texts), *(tool_call_end(c) for c in tools),
            *(step_finished(s) for s in steps)]


class RunState:
    """What a sequence of AG-UI events told: whether a run is open and, in it, the open
    text messages, tool calls and steps (insertion-ordered: opening order), how the last
    run ended, and the text sent so far for message ``text_of`` in the open run."""

    def __init__(self, text_of: str = "") -> None:
        self.open = False
        self.texts: dict[str, None] = {}
        self.tools: dict[str, None] = {}
        self.steps: dict[str, None] = {}
        self.ended: tuple[str, frozenset[str]] | None = None
        self.text_of = text_of
        self.sent: list[str] = []

    @property
    def published_text(self) -> str:
        return "".join(self.sent)

    def take(self, kind: str, data: str | Mapping[str, Any]) -> None:
        """Take in one event (its type, and its body or the body's JSON, parsed only for
        the events that change the picture)."""
        if kind == "RUN_STARTED":
            self._reset(open_=True, ended=None)
        elif kind in ENDS:
            body = _body(data)
            ids: frozenset[str] = frozenset()
            end = "error"
            if kind == "RUN_FINISHED":
                outcome = body.get("outcome") or {}
                end = outcome.get("type") or "success"
                ids = frozenset(i["id"] for i in outcome.get("interrupts") or ())
            self._reset(open_=False, ended=(end, ids))
        elif kind in OPENS:
            field, key = OPENS[kind]
            getattr(self, field)[_body(data)[key]] = None
        elif kind in CLOSES:
            field, key = CLOSES[kind]
            getattr(self, field).pop(_body(data)[key], None)
        elif kind == "TEXT_MESSAGE_CONTENT" and self.text_of:
            body = _body(data)
            if body.get("messageId") == self.text_of:
                self.sent.append(body.get("delta") or "")

    def closers(self) -> list[Any]:
        """Events closing what the open run left open (nothing when none is open)."""
        return closers(texts=self.texts, tools=self.tools, steps=self.steps)

    def _reset(self, *, open_: bool, ended: tuple[str, frozenset[str]] | None) -> None:
        self.open, self.ended = open_, ended
        self.texts.clear()
        self.tools.clear()
        self.steps.clear()
        self.sent.clear()


def _body(data: str | Mapping[str, Any]) -> Mapping[str, Any]:
    return json.loads(data) if isinstance(data, str) else data


@dataclass(frozen=True, slots=True)
class Logged:
    """One stored event: its type, its JSON as stored and that JSON parsed."""

    type: str
    data: str
    body: dict[str, Any]


def read_back(channel: str, *, last: int | None = None,
              client: redis.Redis | None = None) -> list[Logged] | None:
    """The events of ``channel`` from its last ``RUN_STARTED`` / ``RUN_FINISHED`` /
    ``RUN_ERROR`` up to event ``last`` (default: the newest), oldest first; ``[]`` for an
    empty channel. None when one of them expired or is not an event, or no such anchor
    lies within ``OPEN_RUN_CAP`` events back: nothing open can be known (as the store's
    script decides)."""
    client = client or redis_client()
    top = int(client.get(counter_key(channel)) or 0) if last is None else last
    reading = _reading(channel, top)
    try:
        keys = next(reading)
        while True:
            keys = reading.send(client.mget(keys))
    except StopIteration as done:
        return done.value


async def read_back_async(client: redis.asyncio.Redis, channel: str, *,
                          last: int) -> list[Logged] | None:
    """``read_back`` on an asyncio client (a stream's own, ``streams.follow``)."""
    reading = _reading(channel, last)
    try:
        keys = next(reading)
        while True:
            keys = reading.send(await client.mget(keys))
    except StopIteration as done:
        return done.value


def _reading(channel: str, top: int) -> Generator[list[str], list[Any], list[Logged] | None]:
    """``read_back``'s reading, for either client: yields the keys of the next batch (back
    from ``top``), takes their values, returns the tail."""
    tail: list[Logged] = []
    seen = 0  # events read that are not an anchor (the script's ``#seen``)
    while top > 0:
        ids = range(top, max(0, top - READ_BATCH), -1)  # newest first
        for raw in (yield [event_key(channel, i) for i in ids]):
            if raw is None or seen >= OPEN_RUN_CAP:
                return None
            event = _logged(raw)
            if event is None:
                return None
            tail.append(event)
            if event.type in ANCHORS:
                return tail[::-1]
            seen += 1
        top = ids[-1] - 1
    return None if seen else []


def _logged(raw: bytes | str) -> Logged | None:
    try:
        data = json.loads(raw)["data"]
        if not isinstance(data, str):
            data = json.dumps(data)
        body = json.loads(data)
    except (ValueError, TypeError, KeyError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        return None
    return Logged(body["type"], data, body)


def open_run(channel: str, *, text_of: str = "",
             client: redis.Redis | None = None) -> RunState | None:
    """The AG-UI run open on ``channel`` (its last events start with ``RUN_STARTED`` and
    do not end), folded with ``text_of``'s text; None when no run is open or none can be
    known (``read_back``)."""
    tail = read_back(channel, client=client)
    if not tail or tail[0].type != "RUN_STARTED":
        return None
    state = RunState(text_of=text_of)
    for event in tail:
        state.take(event.type, event.body)
    return state
