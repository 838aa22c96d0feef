"""A run's life in the worker: claim a segment, then pause, finish or fail it; and cancel.

Each is one transaction that locks the run first (then its interrupts), writes an
audit row for every status change, and publishes the AG-UI closing events on commit
(``agui.outcomes``). The graph itself runs between claim and pause / finish, outside
any transaction (``execution.executor``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from agentsite.errors import Conflict, NotFound
from agui import outcomes
from agui.events import run_error
from hitl import services as interrupts
from hitl.selectors import can_decide
from runs import registry
from runs.models import AgentRun, Message
from runs.services import run_transition
from streams.publish import publish_on_commit

Status = AgentRun.Status


@dataclass(frozen=True)
class Segment:
    """What a worker needs to execute one stretch of a run, read under lock."""

    run_id: str
    agent: str
    thread_id: str
    assistant_message_id: str
    # None → first segment (start from initial state); else the Command(resume=...) value.
    resume: Any
    initial_state: dict[str, Any] | None
    interrupt_ids: tuple[str, ...]


@dataclass(frozen=True)
class PendingInterrupt:
    interrupt_id: str
    request: dict[str, Any]


def run_claim(*, run_id: str, segments_done: int | None = None,
              redelivered: bool = False) -> Segment | None:
    """Mark a queued / resuming run running and return what to execute, or None.

    This is where a run resumes: the answers not yet applied become the segment's
    ``Command(resume=...)`` value.

    ``segments_done`` is what the run had when this task was enqueued: a task whose
    segment was already claimed (a duplicate, or a stale redelivery) finds another
    count and does nothing. A task redelivered after its worker died finds the run
    still ``running`` on its own segment and takes over from the last checkpoint.
    """
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            return None
        # Locked: of two deliveries of one task only the first sees its segment unclaimed.
        expected = run.segments if segments_done is None else segments_done
        fresh = run.status in (Status.QUEUED, Status.RESUMING) and run.segments == expected
        takeover = (redelivered and run.status == Status.RUNNING
                    and run.segments == expected + 1)
        if not (fresh or takeover):
            return None
        answered = interrupts.interrupts_to_apply(run)
        resume = interrupts.resume_value(answered) if answered else None
        initial = _initial_state(run) if not answered and run.segments == 0 else None
        run.segments += 1
        if run.status != Status.RUNNING:
            run_transition(run=run, to=Status.RUNNING, fields=("segments",))
        else:
            run.save(update_fields=["segments"])
    return Segment(run_id=str(run.id), agent=run.agent, thread_id=run.thread_id,
                   assistant_message_id=str(run.assistant_message_id), resume=resume,
                   initial_state=initial, interrupt_ids=tuple(a.interrupt_id for a in answered))


def _initial_state(run: AgentRun) -> dict[str, Any]:
    spec = registry.get(run.agent)
    user_message = run.messages.filter(role=Message.Role.USER).first()
    return spec.initial_state(spec.input_model.model_validate(run.input),
                              user_message.content if user_message else "")


def _lock_running(run_id: str) -> AgentRun | None:
    run = AgentRun.objects.select_for_update().get(pk=run_id)
    # Locked: a cancel may have landed while the graph ran; its status wins.
    return run if run.status == Status.RUNNING else None


def _close_segment(run: AgentRun, segment: Segment, text: str) -> None:
    now = timezone.now()
    interrupts.interrupts_apply(run=run, interrupt_ids=segment.interrupt_ids, now=now)
    if text and run.assistant_message_id:
        # Output after a resume continues the run's original assistant message
        # (one UPDATE appending in the database: no read-modify-write to race).
        Message.objects.filter(pk=run.assistant_message_id).update(
            content=Concat(F("content"), Value(text)), updated_at=now)


def _messages(run: AgentRun) -> list[Message]:
    return list(Message.objects.filter(conversation_id=run.conversation_id))


def run_pause(*, segment: Segment, interrupts_raised: list[PendingInterrupt], text: str,
              state: dict[str, Any]) -> AgentRun | None:
    """Store the graph's pending interrupts and pause the run; publish on commit."""
    with transaction.atomic():
        run = _lock_running(segment.run_id)
        if run is None:
            return None
        _close_segment(run, segment, text)
        rows = interrupts.interrupts_open(
            run=run, requests=[(i.interrupt_id, i.request) for i in interrupts_raised])
        run_transition(run=run, to=Status.PAUSED)
        publish_on_commit(run.id, outcomes.segment_end(
            run, state=state, messages=_messages(run), pending=rows))
    return run


def run_finish(*, segment: Segment, status: str, result: Any, text: str,
               state: dict[str, Any], reason: str = "") -> AgentRun | None:
    """End a run (completed / rejected / blocked / cancelled) with its result; publish on commit."""
    with transaction.atomic():
        run = _lock_running(segment.run_id)
        if run is None:
            return None
        _close_segment(run, segment, text)
        run.result = result
        if reason:
            run.error = reason
        run_transition(run=run, to=status, fields=("result", "error"))
        publish_on_commit(run.id, outcomes.segment_end(run, state=state,
                                                       messages=_messages(run)))
    return run


def run_fail(*, run_id: str, error: str, code: str = "agent_error") -> AgentRun | None:
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_finished:
            return None
        run.error = error[:10000]
        run_transition(run=run, to=Status.FAILED, payload={"code": code}, fields=("error",))
        publish_on_commit(run.id, [run_error(message=error[:2000], code=code)])
    return run


def run_cancel(*, actor: Any, run_id: Any, surface: str = "api") -> AgentRun:
    """Cancel an unfinished run (its owner, or a reviewer); its open questions with it."""
    with transaction.atomic():
        run = _locked_decidable_run(actor=actor, run_id=run_id)
        # Locked: a decision or the worker finishing races with us; whoever locks first wins.
        if run.is_finished:
            raise Conflict(f"run is already {run.status}", code="run_finished")
        interrupts.interrupts_cancel_pending(run=run, actor=actor, surface=surface)
        was_paused = run.status == Status.PAUSED
        run_transition(run=run, to=Status.CANCELLED, actor=actor, surface=surface)
        if was_paused:
            # A paused run has no live AG-UI run; tell listeners it ended. A running
            # segment ends its own AG-UI run when it finds the run cancelled.
            publish_on_commit(run.id, outcomes.standalone_end(run))
    return run


def _locked_decidable_run(*, actor: Any, run_id: Any) -> AgentRun:
    try:
        run = AgentRun.objects.select_for_update().filter(pk=uuid.UUID(str(run_id))).first()
    except ValueError:
        run = None
    if run is None or not can_decide(actor, run):
        raise NotFound("run not found")
    return run
