"""A run's stream on the Platform's wire: the run's event log (``agui.relay.relay_segment``
over its channel), of which the LangGraph parts the worker published
(``execution.stream_modes``) go out as SSE events (``event: values`` …) with the log's
event ids, after ``event: metadata``; and what ``runs.wait`` / ``join`` answer once the
segment has ended (the checkpointer's values)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async

from agentsite.errors import ServiceError
from agui.events import run_started
from agui.relay import (
    TERMINAL,
    RunEvents,
    Wire,
    check_truth,
    fetch_truth,
    relay_segment,
)
from execution.lifecycle import run_cancel
from execution.stream_modes import SOURCE
from lgapi.runs import SURFACE, Plan
from lgapi.state import interrupts_of, latest, values_of
from runs.models import AgentRun
from streams.db import release_db_connections
from streams.follow import Event, Keepalive


def frame(event: str, data: Any, event_id: int | None = None) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {text}\n\n"


class _Tracked:
    """The run's events, remembering the id of the last one handed on (the relay yields
    each right after receiving it), for the SSE ``id:`` lines."""

    def __init__(self, events: RunEvents) -> None:
        self.events, self.last = events, 0

    async def follow(self, *, after: int) -> AsyncIterator[Any]:
        async for item in self.events.follow(after=after):
            if isinstance(item, Event):
                self.last = item.id
            yield item


def live_start_of(stored: list[tuple[int, Any]], top: int) -> int:
    """Where the run's current segment begins in its stored events (the id before its
    RUN_STARTED), or ``top`` when none is open (the next one is awaited)."""
    kinds = [e.type for _, e in stored]
    starts = [i for i, k in enumerate(kinds) if k == "RUN_STARTED"]
    if not starts or any(k in ("RUN_FINISHED", "RUN_ERROR") for k in kinds[starts[-1]:]):
        return top
    return stored[starts[-1]][0] - 1


def segment_of(stored: list[tuple[int, Any]], last: int) -> tuple[int, int]:
    """Where a rejoin after event ``last`` starts (``(after, skip)``): the segment holding
    ``last`` again from its RUN_STARTED, skipping what the client had, while LangGraph
    parts of it are still to come; else the next segment (the client had all of that
    one: what followed its last part were AG-UI events only)."""
    start = next((i for i, e in reversed(stored) if i <= last and e.type == "RUN_STARTED"),
                 None)
    if start is None or any(i <= last and i > start and e.type in TERMINAL
                            for i, e in stored):
        return last, 0  # ``last`` was past its segment's end
    rest = [(i, e) for i, e in stored if i > last]
    end = next((n for n, (_, e) in enumerate(rest) if e.type in TERMINAL), None)
    if end is not None and not any(e.type == "RAW" for _, e in rest[:end]):
        return rest[end][0], 0
    return start - 1, last


async def _live_start(events: RunEvents) -> int:
    top = await events.counter()
    return live_start_of(await events.stored(1, top), top)


async def _segment_of(events: RunEvents, last: int) -> tuple[int, int]:
    return segment_of(await events.stored(1, await events.counter()), last)


class Messages:
    """LangGraph's ``messages`` mode on the wire: ``messages/metadata`` once per message,
    then ``messages/partial`` (chunks so far) or ``messages/complete``."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, Any]] = {}

    def frames(self, data: Any, event_id: int) -> list[str]:
        if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], dict)):
            return []
        message, meta = data
        key = str(message.get("id"))
        out = []
        if key not in self.seen:
            out.append(frame("messages/metadata", {key: {"metadata": meta}}, event_id))
        if str(message.get("type", "")).endswith("Chunk"):
            so_far = self.seen.get(key)
            if so_far is not None and isinstance(so_far.get("content"), str) \
                    and isinstance(message.get("content"), str):
                message = {**message, "content": so_far["content"] + message["content"]}
            self.seen[key] = message
            out.append(frame("messages/partial", [message], event_id))
        else:
            self.seen[key] = message
            out.append(frame("messages/complete", [message], event_id))
        return out


async def stream(plan: Plan) -> AsyncIterator[str]:
    """The SSE body: ``metadata`` first, then the run's LangGraph parts in the modes
    asked for, until its segment ends (paused, finished, failed: ``error``)."""
    wanted = set(plan.modes)
    messages = Messages()
    ids = {"thread_id": plan.run.thread_id, "run_id": plan.run_id}
    ended = not plan.live
    try:  # from the first frame: a client may go as soon as it has it
        yield frame("metadata", {"run_id": plan.run_id, "attempt": 1})
        if ended:
            return
        async for text in _parts(plan, ids, wanted, messages):
            yield text
        ended = True
    finally:
        if not ended and plan.cancel_by is not None:
            # The client went first and asked for the run to go with it. Not awaited: the
            # answer's task is being cancelled; the cancel is the same service as anywhere.
            asyncio.get_running_loop().run_in_executor(
                None, _cancel_quietly, plan.cancel_by, plan.run_id)


def _cancel_quietly(user: Any, run_id: str) -> None:
    try:
        run_cancel(actor=user, run_id=run_id, surface=SURFACE)
    except ServiceError:  # ended or cancelled meanwhile: nothing to do
        pass
    finally:
        release_db_connections()


async def _parts(plan: Plan, ids: dict[str, str], wanted: set[str],
                 messages: Messages) -> AsyncIterator[str]:
    async with RunEvents(plan.run_id) as events:
        events.surface = "langgraph"  # its delivery latency
        tracked = _Tracked(events)
        skip = 0  # events up to this id were sent before (a rejoin)
        if plan.last_event_id is not None:
            after, skip = await _segment_of(events, plan.last_event_id)
        else:
            after = plan.after if plan.after >= 0 else await _live_start(events)
        async for item in relay_segment(
                tracked, after=after, check=lambda: check_truth(plan.run_id),
                truth=lambda: fetch_truth(plan.run_id), started=lambda: run_started(**ids)):
            if isinstance(item, Keepalive):
                yield ": keepalive\n\n"
                continue
            if not isinstance(item, Wire):
                continue
            if item.type not in TERMINAL and tracked.last <= skip:
                continue  # the client has it
            for text in translate(plan, item, tracked.last, wanted, messages):
                yield text


def translate(plan: Plan, item: Wire, event_id: int, wanted: set[str],
              messages: Messages) -> list[str]:
    """One stored event of the run's segment as the Platform's SSE frames (none for the
    AG-UI events that are not LangGraph parts); a RUN_FINISHED / RUN_ERROR sets
    ``plan.ended``. Used by the stream here and by the proxy's holds (``lgapi.hold``)."""
    if item.type == "RUN_FINISHED":
        plan.ended = (json.loads(item.data).get("outcome") or {}).get("type") or "success"
        return []
    if item.type == "RUN_ERROR":
        plan.ended = "error"
        error = json.loads(item.data)
        return [frame("error", {"error": error.get("code") or "error",
                                "message": error.get("message") or "the run failed"})]
    if item.type != "RAW":
        return []
    raw = json.loads(item.data)
    part = raw.get("event") if raw.get("source") == SOURCE else None
    if not isinstance(part, dict):
        return []
    mode, data, ns = part.get("mode"), part.get("data"), part.get("ns") or []
    # A subgraph's part, as LangGraph Server names it: ``<mode>|<ns>|…``. A client that
    # did not ask for subgraphs gets their messages only, as the graph streams those
    # without ``subgraphs`` too.
    suffix = "|" + "|".join(map(str, ns)) if ns and plan.subgraphs else ""
    if ns and not plan.subgraphs and mode != "messages":
        return []
    if mode == "messages":
        out = [frame("messages" + suffix, data, event_id)] if "messages-tuple" in wanted \
            else []
        if "messages" in wanted:
            out += messages.frames(data, event_id)
        return out
    if mode in wanted:
        return [frame(mode + suffix, data, event_id)]
    return []


async def wait_end(plan: Plan) -> None:
    """Until the run's segment has ended (nothing when the run is not live)."""
    if not plan.live:
        return
    async for _ in stream(plan):
        pass


def _released(func: Any) -> Any:
    def run(*args: Any) -> Any:
        try:
            return func(*args)
        finally:
            release_db_connections()

    return sync_to_async(run, thread_sensitive=False)


def outcome(plan: Plan) -> dict[str, Any]:
    """What ``runs.wait`` / ``join`` answer once the segment ended: the thread's values
    from the checkpointer, with ``__interrupt__`` when the run waits for answers, or
    ``__error__`` for a failed run. The run's row is read only when the stream did not
    say how the segment ended, or that it failed (for its error)."""
    if plan.ended in ("interrupt", "success", "cancelled"):
        saved = latest(plan.run.thread_id)
        values = values_of(saved)
        if plan.ended == "interrupt":
            values["__interrupt__"] = [i for items in interrupts_of(saved).values()
                                       for i in items]
        return values
    run = AgentRun.objects.filter(pk=plan.run_id).first()
    if run is None:
        return {"__error__": {"error": "run_gone", "message": "the run was deleted"}}
    saved = latest(run.thread_id)
    values = values_of(saved)
    if run.status == AgentRun.Status.PAUSED:
        values["__interrupt__"] = [i for items in interrupts_of(saved).values() for i in items]
    elif run.status in (AgentRun.Status.FAILED, AgentRun.Status.EXPIRED):
        values["__error__"] = {"error": run.status, "message": run.error or run.status}
    return values


outcome_async = _released(outcome)
