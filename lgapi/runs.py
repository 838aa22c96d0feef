"""Runs through the Platform API: a create becomes ``run_start`` or, with
``command.resume``, ``interrupts_answer`` (the decision service every door uses); what
its answer then streams or waits for is a ``Plan`` (``lgapi.stream`` serves it).

Nothing here keeps state: a run's modes are kept on the run (``AgentRun.stream_modes``),
its status is the run's row, its values are the checkpointer's.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import OuterRef, QuerySet

from agentsite.errors import ServiceError
from agentsite.limits import check_answer_size
from execution.lifecycle import interrupts_answer, run_cancel
from execution.stream_modes import SUBGRAPHS
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide, visible_conversations
from lgapi import shapes
from lgapi.bodies import RunCreate
from lgapi.fork import fork_from_checkpoint
from lgapi.http import LgError
from runs.models import AgentRun, Conversation
from runs.services import run_start, run_stream_modes_add
from streams.keys import counter_key, run_channel
from streams.publish import redis_client

SURFACE = "langgraph"
EVENT_ID = re.compile(r"[0-9]{1,18}")


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
    # ``stream_subgraphs``: subgraphs' parts too, their event named ``<mode>|<ns>``.
    subgraphs: bool = False

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
    webhook = body.webhook_url()
    modes = [] if waits and "stream_mode" not in body.model_fields_set else body.modes()
    # The worker streams subgraphs for the run (execution.stream_modes.SUBGRAPHS).
    kept = [*modes, SUBGRAPHS] if body.stream_subgraphs and modes else modes
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
        if body.fork_checkpoint():  # a fork: its run is on a new thread (lgapi.fork)
            run = fork_from_checkpoint(user, visible_thread(user, thread_id),
                                       body.fork_checkpoint(), body.command.resume, modes)
            return Plan(run=run, after=0, modes=modes, live=run.status in AgentRun.LIVE)
        plan = resume(user, thread_id, body.command.resume, kept, agent.name)
        plan.modes, plan.subgraphs = modes, body.stream_subgraphs
        return plan
    message, agent_input = split_input(body.input, body.context)

    def started() -> AgentRun:
        # run_start checks the thread (the owner's, or made here for if_not_exists=create;
        # someone else's answers as a missing one) and that it is idle.
        return run_start(owner=user, agent=agent.name, input=agent_input, message=message,
                         thread_id=thread_id, create_thread=body.if_not_exists == "create",
                         surface=SURFACE, metadata=body.metadata, stream_modes=kept,
                         enqueue=body.multitask_strategy == "enqueue", webhook=webhook)

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
        # interrupt / rollback: the runs waiting for the thread (first: the holder's end
        # would start one) and the run holding it are cancelled, as LangGraph Server
        # cancels a thread's pending and running runs; then ours starts.
        for waiting in (AgentRun.objects.filter(thread_id=thread_id,
                                                status=AgentRun.Status.WAITING)
                        .order_by("-created_at").values_list("pk", flat=True)):
            _cancel_if_unfinished(user, waiting)
        run_cancel(actor=user, run_id=err.extra["run_id"], surface=SURFACE)
        run = started()
    return Plan(run=run, after=0, modes=modes, subgraphs=body.stream_subgraphs,
                cancel_by=user if body.on_disconnect == "cancel" else None)


def _cancel_if_unfinished(user: Any, run_id: Any) -> None:
    try:
        run_cancel(actor=user, run_id=run_id, surface=SURFACE)
    except ServiceError as err:
        if err.code != "run_finished":  # cancelled meanwhile: nothing to do
            raise


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
    answered = interrupts_answer(actor=user, run_id=run.id, answers=answers, surface=SURFACE)
    return Plan(run=answered.run, after=after, modes=modes,
                live=answered.status in AgentRun.LIVE)


def join_plan(run: AgentRun, modes: list[str], last_event_id: str | None) -> Plan:
    """Joining a run's stream: after ``Last-Event-ID`` when given, else from the start of
    its current segment; a run not live has nothing more to stream."""
    text = (last_event_id or "").strip()
    # One of our event ids (ASCII digits, a 64-bit counter's); anything else ("-1", which
    # useStream sends for "from the start", "²", 5,000 digits) is read as none.
    last = int(text) if EVENT_ID.fullmatch(text) else None
    live = run.status in AgentRun.LIVE
    if not live and last is not None:
        live = last < _counter(run.id)  # events the client has not had yet
    kept = [m for m in run.stream_modes if m != SUBGRAPHS]
    return Plan(run=run, after=-1, modes=modes or kept or ["values"], live=live,
                last_event_id=last, subgraphs=SUBGRAPHS in run.stream_modes)


def thread_runs(conversation: Conversation) -> QuerySet[AgentRun]:
    return conversation.runs.order_by("-created_at")
