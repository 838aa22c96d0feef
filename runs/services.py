"""Writes for runs. Views, API, admin and tasks call these; nothing else writes runs.

Each service is one transaction that locks what it changes, writes an audit row
for every status change, and enqueues / publishes only on commit. No graph step
or network call happens inside these transactions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone
from pydantic import ValidationError

from agentsite.errors import Conflict, InvalidInput, NotFound
from hitl.kinds import CANCELLED_RESUME
from runs import agui, registry
from runs.models import AgentRun, AuditLog, Conversation, Message
from runs.publish import notify_user_on_commit, publish_on_commit

Status = AgentRun.Status


def _label(actor: Any) -> str:
    if actor is None:
        return "system:worker"
    return getattr(actor, "username", str(actor))


def audit(*, run: AgentRun, action: str, actor: Any = None, from_status: str = "",
          to_status: str = "", interrupt_ref: str = "", payload: Any = None) -> AuditLog:
    return AuditLog.objects.create(
        run=run, action=action, actor=actor if getattr(actor, "pk", None) else None,
        actor_label=_label(actor), from_status=from_status, to_status=to_status,
        interrupt_ref=interrupt_ref, payload=payload,
    )


def run_transition(*, run: AgentRun, to: str, actor: Any = None, payload: Any = None,
                   fields: tuple[str, ...] = ()) -> None:
    """Move a locked run to ``to`` and record it. Caller holds the row lock."""
    before = run.status
    run.status = to
    if to in AgentRun.FINISHED:
        run.finished_at = timezone.now()
    run.save(update_fields=["status", "finished_at", "updated_at", *fields])
    audit(run=run, action=AuditLog.Action.RUN_STATUS, actor=actor, from_status=before,
          to_status=to, payload=payload)


def _enqueue_on_commit(run: AgentRun) -> None:
    """Enqueue the run's next segment after commit. Caller holds the run's row lock.

    The task carries the number of segments run so far, so a stale or duplicate
    delivery can tell that its segment was already taken (see run_claim).
    """
    from runs.tasks import run_execute

    run_id, done = str(run.id), run.segments
    transaction.on_commit(lambda: run_execute.delay(run_id, done))


def _pending_ids(run: AgentRun) -> list[str]:
    return list(run.interrupts.filter(status="pending").values_list("interrupt_id", flat=True))


def run_start(*, owner: Any, agent: str, input: dict[str, Any] | None = None,
              message: str = "", thread_id: str | None = None,
              create_thread: bool = False) -> AgentRun:
    """Create a queued run (and its conversation / messages) and enqueue it on commit.

    ``create_thread``: a ``thread_id`` the owner has no conversation for yet starts a
    new conversation with that id (AG-UI clients choose their own thread ids).
    """
    spec = registry.get(agent)
    if spec is None:
        raise NotFound(f"unknown agent {agent!r}", code="unknown_agent")
    try:
        clean = spec.input_model.model_validate(input or {})
    except ValidationError as err:
        fields = {".".join(str(p) for p in e["loc"]) or "input": [e["msg"]] for e in err.errors()}
        raise InvalidInput(f"invalid input for agent {agent!r}",
                           fields={"input": fields}) from None

    with transaction.atomic():
        if thread_id:
            try:
                thread_uuid: uuid.UUID | None = uuid.UUID(str(thread_id))
            except ValueError:
                thread_uuid = None
            conversation = (Conversation.objects.select_for_update()
                            .filter(pk=thread_uuid, owner=owner).first() if thread_uuid else None)
            if conversation is None and create_thread and thread_uuid is not None:
                try:
                    with transaction.atomic():
                        conversation = Conversation.objects.create(
                            id=thread_uuid, owner=owner, agent=agent,
                            title=(message or agent)[:200])
                except IntegrityError:
                    conversation = None  # the id is someone else's thread
            if conversation is None:
                raise NotFound(f"thread {thread_id!r} not found", code="unknown_thread")
            if conversation.agent != agent:
                raise Conflict(f"thread belongs to agent {conversation.agent!r}",
                               code="agent_mismatch")
            # Locked conversation row: two starts on one thread serialise here.
            active = conversation.runs.filter(status__in=AgentRun.ACTIVE).first()
            if active is not None:
                raise Conflict(
                    f"thread has an unfinished run {active.id} ({active.status}); "
                    "answer or cancel it first",
                    code="thread_busy",
                    extra={"run_id": str(active.id),
                           "pending_interrupt_ids": _pending_ids(active)},
                )
        else:
            conversation = Conversation.objects.create(
                owner=owner, agent=agent, title=(message or agent)[:200])
        run = AgentRun(owner=owner, conversation=conversation, agent=agent,
                       agent_version=spec.version, thread_id=conversation.thread_id,
                       input=clean.model_dump(mode="json"))
        try:
            with transaction.atomic():
                run.save()
        except IntegrityError:
            raise Conflict("thread has an unfinished run", code="thread_busy") from None
        if message:
            Message.objects.create(conversation=conversation, run=run, role=Message.Role.USER,
                                   content=message)
        assistant = Message.objects.create(conversation=conversation, run=run,
                                           role=Message.Role.ASSISTANT, content="")
        run.assistant_message = assistant
        run.save(update_fields=["assistant_message"])
        audit(run=run, action=AuditLog.Action.RUN_STATUS, actor=owner, to_status=Status.QUEUED,
              payload={"input": run.input, "message": message})
        _enqueue_on_commit(run)
    return run


def run_cancel(*, actor: Any, run_id: Any) -> AgentRun:
    from hitl.models import AgentInterrupt

    with transaction.atomic():
        run = _locked_visible_run(actor=actor, run_id=run_id)
        # Locked: a decision or the worker finishing races with us; whoever locks first wins.
        if run.is_finished:
            raise Conflict(f"run is already {run.status}", code="run_finished")
        pending = list(AgentInterrupt.objects.select_for_update()
                       .filter(run=run, status=AgentInterrupt.Status.PENDING))
        for item in pending:
            item.status = AgentInterrupt.Status.CANCELLED
            item.save(update_fields=["status"])
            audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor,
                  interrupt_ref=item.interrupt_id, from_status="pending", to_status="cancelled")
        was_running = run.status in (Status.RUNNING, Status.RESUMING, Status.QUEUED)
        run_transition(run=run, to=Status.CANCELLED, actor=actor)
        if not was_running:
            # A paused run has no live AG-UI run; tell listeners it ended.
            ids = {"thread_id": run.thread_id, "run_id": str(run.id)}
            publish_on_commit(run.id, [agui.run_started(**ids),
                                       agui.run_finished_cancelled(**ids)])
        if pending:
            notify_user_on_commit(run.owner_id, {"type": "interrupts_changed",
                                                 "run_id": str(run.id)})
    return run


def _locked_visible_run(*, actor: Any, run_id: Any) -> AgentRun:
    try:
        return AgentRun.objects.select_for_update().get(pk=uuid.UUID(str(run_id)), owner=actor)
    except (ValueError, AgentRun.DoesNotExist):
        raise NotFound("run not found") from None


# --- worker side ----------------------------------------------------------------

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




def run_claim(*, run_id: str, segments_done: int | None = None,
              redelivered: bool = False) -> Segment | None:
    """Mark a queued / resuming run running and return what to execute, or None.

    ``segments_done`` is what the run had when this task was enqueued: a task whose
    segment was already claimed (a duplicate, or a stale redelivery) finds another
    count and does nothing. A task redelivered after its worker died finds the run
    still ``running`` on its own segment and takes over from the last checkpoint.
    """
    from hitl.models import AgentInterrupt

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
        answered = list(
            AgentInterrupt.objects.select_for_update()
            .filter(run=run, applied_at__isnull=True,
                    status__in=[AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.CANCELLED])
            .exclude(decided_at__isnull=True)
        )
        resume: Any = None
        initial: dict[str, Any] | None = None
        if answered:
            # Always the map form {interrupt_id: value}: LangGraph reads any dict whose
            # keys look like interrupt ids (including {}, the unlock answer) as such a map,
            # so passing a bare payload would be ambiguous.
            resume = {a.interrupt_id: (a.decision if a.status == AgentInterrupt.Status.DECIDED
                                       else CANCELLED_RESUME) for a in answered}
        elif run.segments == 0:
            spec = registry.get(run.agent)
            user_message = run.messages.filter(role=Message.Role.USER).first()
            initial = spec.initial_state(spec.input_model.model_validate(run.input),
                                         user_message.content if user_message else "")
        run.segments += 1
        if run.status != Status.RUNNING:
            run_transition(run=run, to=Status.RUNNING, fields=("segments",))
        else:
            run.save(update_fields=["segments"])
    return Segment(run_id=str(run.id), agent=run.agent, thread_id=run.thread_id,
                   assistant_message_id=str(run.assistant_message_id), resume=resume,
                   initial_state=initial, interrupt_ids=tuple(a.interrupt_id for a in answered))


@dataclass(frozen=True)
class PendingInterrupt:
    interrupt_id: str
    request: dict[str, Any]


def _close_segment(run: AgentRun, segment: Segment, text: str) -> None:
    from hitl.models import AgentInterrupt

    now = timezone.now()
    for item in AgentInterrupt.objects.select_for_update().filter(
            run=run, interrupt_id__in=segment.interrupt_ids, applied_at__isnull=True):
        item.applied_at = now
        fields = ["applied_at"]
        if item.status == AgentInterrupt.Status.DECIDED:
            item.status = AgentInterrupt.Status.APPLIED
            fields.append("status")
            audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                  interrupt_ref=item.interrupt_id, from_status="decided", to_status="applied")
        item.save(update_fields=fields)
    if text and run.assistant_message_id:
        # Output after a resume continues the run's original assistant message
        # (one UPDATE appending in the database: no read-modify-write to race).
        Message.objects.filter(pk=run.assistant_message_id).update(
            content=Concat(F("content"), Value(text)), updated_at=now)


def _lock_running(run_id: str) -> AgentRun | None:
    run = AgentRun.objects.select_for_update().get(pk=run_id)
    # Locked: a cancel may have landed while the graph ran; its status wins.
    return run if run.status == Status.RUNNING else None


def run_pause(*, segment: Segment, interrupts: list[PendingInterrupt], text: str,
              state: dict[str, Any]) -> AgentRun | None:
    """Store the graph's pending interrupts and pause the run; publish on commit."""
    from hitl.models import AgentInterrupt

    with transaction.atomic():
        run = _lock_running(segment.run_id)
        if run is None:
            return None
        _close_segment(run, segment, text)
        rows = []
        known = dict(AgentInterrupt.objects.filter(
            run=run, interrupt_id__in=[i.interrupt_id for i in interrupts])
            .values_list("interrupt_id", "status"))
        for item in interrupts:
            if item.interrupt_id in known:
                # An answered interrupt raised again means its answer never reached the graph.
                raise RuntimeError(f"interrupt {item.interrupt_id} was raised again after "
                                   f"it was {known[item.interrupt_id]}")
            rows.append(AgentInterrupt.objects.create(
                run=run, interrupt_id=item.interrupt_id, kind=item.request.get("type", "unknown"),
                request=item.request, expires_at=item.request.get("expiresAt")))
        for row in rows:
            audit(run=run, action=AuditLog.Action.INTERRUPT_STATUS,
                  interrupt_ref=row.interrupt_id, to_status=row.status,
                  payload=row.request)
        run_transition(run=run, to=Status.PAUSED)
        messages = list(Message.objects.filter(conversation_id=run.conversation_id))
        publish_on_commit(run.id, [
            agui.state_snapshot(state),
            agui.messages_snapshot(messages),
            agui.run_finished_interrupt(
                thread_id=run.thread_id, run_id=str(run.id),
                interrupts=[agui.interrupt_model(
                    interrupt_id=r.interrupt_id, request=r.request,
                    expires_at=r.expires_at.isoformat() if r.expires_at else None) for r in rows]),
        ])
        notify_user_on_commit(run.owner_id, {"type": "interrupts_changed", "run_id": str(run.id)})
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
        messages = list(Message.objects.filter(conversation_id=run.conversation_id))
        finished = (agui.run_finished_cancelled(thread_id=run.thread_id, run_id=str(run.id))
                    if status == Status.CANCELLED else
                    agui.run_finished_success(thread_id=run.thread_id, run_id=str(run.id),
                                              result={"status": status, "result": result}))
        publish_on_commit(run.id, [agui.state_snapshot(state), agui.messages_snapshot(messages),
                                   finished])
    return run


def run_fail(*, run_id: str, error: str, code: str = "agent_error") -> AgentRun | None:
    with transaction.atomic():
        run = AgentRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_finished:
            return None
        run.error = error[:10000]
        run_transition(run=run, to=Status.FAILED, payload={"code": code}, fields=("error",))
        publish_on_commit(run.id, [agui.run_error(message=error[:2000], code=code)])
    return run
