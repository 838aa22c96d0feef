"""Runs through the Platform API: a create becomes ``run_start`` or, with
``command.resume``, ``interrupts_answer`` (the decision service every door uses); its
stream is the run's event log (``agui.relay.relay_segment`` over the run's channel), of
which this door sends the LangGraph parts the worker published (``execution.stream_modes``)
as the Platform's SSE events, with the log's event ids.

Nothing here keeps state: a run's modes are kept on the run (``AgentRun.stream_modes``),
its status is the run's row, its values are the checkpointer's.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, QuerySet

from agentsite.errors import ServiceError
from agentsite.limits import check_answer_size
from agui.events import run_started
from agui.relay import (
    KEEPALIVE,
    TERMINAL,
    RunEvents,
    Wire,
    check_truth,
    fetch_truth,
    relay_segment,
)
from execution.lifecycle import interrupts_answer, run_cancel
from execution.stream_modes import SOURCE
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide, visible_conversations
from lgapi import shapes
from lgapi.bodies import RunCreate
from lgapi.http import LgError
from lgapi.state import interrupts_of, latest, values_of
from runs.models import AgentRun, Conversation
from runs.services import run_start, run_stream_modes_add
from streams.db import release_db_connections
from streams.keys import counter_key, run_channel
from streams.publish import redis_client

SURFACE = "langgraph"


@dataclass
class Plan:
    """What a run request streams or waits for, decided (and committed) first."""

    run: AgentRun
    after: int  # the first segment whose RUN_STARTED comes after this event id; -1: live
    modes: list[str] = field(default_factory=list)
    live: bool = True
    # ``on_disconnect="cancel"``: who cancels the run if the client goes before its end.
    cancel_by: Any = None
    # How the streamed segment ended, as its closing event said: "interrupt", "success",
    # "cancelled" (RUN_FINISHED's outcome) or "error" (RUN_ERROR); None before.
    ended: str | None = None
    # A rejoin's Last-Event-ID: the rest of the segment holding that event comes next.
    last_event_id: int | None = None

    @property
    def run_id(self) -> str:
        return str(self.run.id)


def parse_uuid(value: str, what: str = "thread") -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise LgError(422, f"{what}_id must be a UUID, got {value[:80]!r}") from None


def visible_thread(user: Any, thread_id: str) -> Conversation:
    """A thread the user may read (own, or any for a reviewer); 404 for everything else,
    someone else's included."""
    tid = parse_uuid(thread_id)
    # The user's own first (no permission lookup); a reviewer's view only on a miss.
    found = (Conversation.objects.filter(pk=tid, owner=user).first()
             or visible_conversations(user).filter(pk=tid).first())
    if found is None:
        raise LgError(404, f"Thread with ID {thread_id} not found")
    return found


def visible_run(user: Any, thread_id: str, run_id: str) -> AgentRun:
    conversation = visible_thread(user, thread_id)
    found = conversation.runs.filter(pk=parse_uuid(run_id, "run")).first()
    if found is None:
        raise LgError(404, f"Run with ID {run_id} not found")
    return found


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: their text parts
        return "".join(p["text"] for p in content
                       if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def split_input(data: dict[str, Any] | None, context: dict[str, Any] | None,
                ) -> tuple[str, dict[str, Any]]:
    """A LangGraph input as our start takes it: the last human message of ``messages``
    is the run's message; the other keys, over ``context``, are the agent's input (its
    input model validates them, as for every door)."""
    rest = dict(data or {})
    messages = rest.pop("messages", None)
    if isinstance(messages, (str, dict)):
        messages = [messages]
    if messages is not None and not isinstance(messages, list):
        raise LgError(422, "input.messages: expected a list of messages")
    message = ""
    for item in reversed(messages or []):
        if isinstance(item, str):
            message = item
            break
        if isinstance(item, dict) and (item.get("role") or item.get("type")) in ("user", "human"):
            message = _text(item.get("content"))
            break
    return message, {**(context or {}), **rest}


def _counter(run_id: Any) -> int:
    return int(redis_client().get(counter_key(run_channel(run_id))) or 0)


def start(user: Any, body: RunCreate, thread_id: str | None, *, waits: bool = False) -> Plan:
    """Start a run (or resume the thread's paused one) as ``body`` says. ``waits``: the
    client waits for the values (``runs.wait``): no stream mode unless it names some."""
    body.refused()
    modes = [] if waits and "stream_mode" not in body.model_fields_set else body.modes()
    agent = shapes.agent_for(body.assistant_id)
    if agent is None:
        raise LgError(404, f"Assistant {body.assistant_id} not found")
    resuming = body.command is not None and "resume" in body.command.model_fields_set
    if resuming and body.input is not None:
        raise LgError(422, "Send either input or command.resume, not both.")
    if thread_id is not None:
        parse_uuid(thread_id)
    if resuming:
        if thread_id is None:
            raise LgError(422, "command.resume needs a thread: the run it answers is there.")
        return resume(user, thread_id, body.command.resume, modes, agent.name)
    message, agent_input = split_input(body.input, body.context)

    def started() -> AgentRun:
        # run_start checks the thread (the owner's, or made here for if_not_exists=create;
        # someone else's answers as a missing one) and that it is idle.
        return run_start(owner=user, agent=agent.name, input=agent_input, message=message,
                         thread_id=thread_id, create_thread=body.if_not_exists == "create",
                         surface=SURFACE, metadata=body.metadata, stream_modes=modes)

    try:
        run = started()
    except ServiceError as err:
        if err.code == "unknown_thread":
            raise LgError(404, f"Thread with ID {thread_id} not found") from None
        if err.code != "thread_busy":
            raise
        if body.multitask_strategy == "reject":
            raise LgError(409, f"Thread is busy: {err.detail}; resume it with command.resume, "
                          "cancel it, or use multitask_strategy 'interrupt'.") from None
        if not err.extra.get("run_id"):  # a concurrent start took the thread
            raise LgError(409, f"Thread is busy: {err.detail}") from None
        # interrupt / rollback: the run holding the thread is cancelled, then ours starts.
        run_cancel(actor=user, run_id=err.extra["run_id"], surface=SURFACE)
        run = started()
    return Plan(run=run, after=0, modes=modes,
                cancel_by=user if body.on_disconnect == "cancel" else None)


def resume(user: Any, thread_id: str, value: Any, modes: list[str], agent: str) -> Plan:
    """``command.resume``: a single value answers the one pending interrupt; a map by
    interrupt id answers those. Through the decision service: validated per format,
    consumed once (a second answer finds nothing pending: 409)."""
    # The thread's unfinished run with its open questions' ids, in one query.
    run = (AgentRun.objects.filter(thread_id=thread_id, status__in=AgentRun.ACTIVE)
           .annotate(pending_ids=ArraySubquery(AgentInterrupt.objects.filter(
               run=OuterRef("pk"), status=AgentInterrupt.Status.PENDING)
               .order_by("created_at", "id").values("interrupt_id"))).first())
    if run is None or not can_decide(user, run):
        visible_thread(user, thread_id)  # 404 for a thread not theirs
        raise LgError(409, "The thread has no pending interrupt to resume.")
    if run.agent != agent:
        raise LgError(409, f"The thread's run is of assistant {run.agent!r}, not {agent!r}.")
    pending = list(run.pending_ids)
    if not pending:
        raise LgError(409, f"Run {run.id} has no pending interrupt ({run.status}); it was "
                      "answered already.")
    if isinstance(value, dict) and value and set(value) <= set(pending):
        answers = [Answer(interrupt_id=k, payload=v) for k, v in value.items()]
    elif len(pending) == 1:
        answers = [Answer(interrupt_id=pending[0], payload=value)]
    else:
        raise LgError(422, f"{len(pending)} interrupts are pending ({', '.join(pending)}): "
                      "resume with a map {interrupt_id: value}.")
    for answer in answers:
        check_answer_size(answer.payload, f"command.resume.{answer.interrupt_id}")
    if not set(modes) <= set(run.stream_modes):
        run_stream_modes_add(run_id=run.id, modes=modes)
    # Read before the decision commits: the resumed segment's events come after it.
    after = _counter(run.id)
    run = interrupts_answer(actor=user, run_id=run.id, answers=answers, surface=SURFACE)
    return Plan(run=run, after=after, modes=modes, live=run.status in AgentRun.LIVE)


def join_plan(run: AgentRun, modes: list[str], last_event_id: str | None) -> Plan:
    """Joining a run's stream: after ``Last-Event-ID`` when given, else from the start of
    its current segment; a run not live has nothing more to stream."""
    last = int(last_event_id) if last_event_id and last_event_id.strip().isdigit() else None
    live = run.status in AgentRun.LIVE
    if not live and last is not None:
        live = last < _counter(run.id)  # events the client has not had yet
    return Plan(run=run, after=-1, modes=modes or list(run.stream_modes) or ["values"],
                live=live, last_event_id=last)


# --- The stream ---------------------------------------------------------------------

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
            if isinstance(item, tuple):
                self.last = item[0]
            yield item


async def _live_start(events: RunEvents) -> int:
    """Where the run's current segment begins in the log (its RUN_STARTED), or the top
    when none is open (the next one is awaited)."""
    top = await events.counter()
    stored = await events.stored(1, top)
    kinds = [e.type for _, e in stored]
    starts = [i for i, k in enumerate(kinds) if k == "RUN_STARTED"]
    if not starts or any(k in ("RUN_FINISHED", "RUN_ERROR") for k in kinds[starts[-1]:]):
        return top
    return stored[starts[-1]][0] - 1


async def _segment_of(events: RunEvents, last: int) -> tuple[int, int]:
    """Where a rejoin after event ``last`` starts (``(after, skip)``): the segment holding
    ``last`` again from its RUN_STARTED, skipping what the client had, while LangGraph
    parts of it are still to come; else the next segment (the client had all of that
    one: what followed its last part were AG-UI events only)."""
    stored = await events.stored(1, await events.counter())
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


class _Messages:
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
    yield frame("metadata", {"run_id": plan.run_id, "attempt": 1})
    if not plan.live:
        return
    wanted = set(plan.modes)
    tuples, whole = "messages-tuple" in wanted, "messages" in wanted
    messages = _Messages()
    ids = {"thread_id": plan.run.thread_id, "run_id": plan.run_id}
    ended = False
    try:
        async for text in _parts(plan, ids, wanted, tuples, whole, messages):
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


async def _parts(plan: Plan, ids: dict[str, str], wanted: set[str], tuples: bool,
                 whole: bool, messages: _Messages) -> AsyncIterator[str]:
    async with RunEvents(plan.run_id) as events:
        tracked = _Tracked(events)
        skip = 0  # events up to this id were sent before (a rejoin)
        if plan.last_event_id is not None:
            after, skip = await _segment_of(events, plan.last_event_id)
        else:
            after = plan.after if plan.after >= 0 else await _live_start(events)
        async for item in relay_segment(
                tracked, after=after, check=lambda: check_truth(plan.run_id),
                truth=lambda: fetch_truth(plan.run_id), started=lambda: run_started(**ids)):
            if item is KEEPALIVE:
                yield ": keepalive\n\n"
                continue
            if not isinstance(item, Wire):
                continue
            if item.type not in TERMINAL and tracked.last <= skip:
                continue  # the client has it
            if item.type == "RUN_FINISHED":
                plan.ended = (json.loads(item.data).get("outcome") or {}).get(
                    "type") or "success"
                continue
            if item.type == "RUN_ERROR":
                plan.ended = "error"
                error = json.loads(item.data)
                yield frame("error", {"error": error.get("code") or "error",
                                      "message": error.get("message") or "the run failed"})
                continue
            if item.type != "RAW":
                continue
            raw = json.loads(item.data)
            part = raw.get("event") if raw.get("source") == SOURCE else None
            if not isinstance(part, dict):
                continue
            mode, data = part.get("mode"), part.get("data")
            if mode == "messages":
                if tuples:
                    yield frame("messages", data, tracked.last)
                if whole:
                    for text in messages.frames(data, tracked.last):
                        yield text
            elif mode in wanted:
                yield frame(mode, data, tracked.last)


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


def thread_runs(conversation: Conversation) -> QuerySet[AgentRun]:
    return conversation.runs.order_by("-created_at")
