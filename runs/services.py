"""Writes for runs: audit, status transitions, start, and the enqueue of a segment.

Each service is one transaction that locks what it changes, writes an audit row
for every status change, and enqueues only on commit. No graph step or network
call happens inside these transactions. Interrupt writes live in ``hitl.decide``,
``hitl.assign``, ``hitl.deadlines`` and ``hitl.lifecycle``; the worker's claim / pause /
finish and cancel in ``execution.lifecycle``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

from celery import current_app as celery_app
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import BaseModel, ValidationError

from agentsite.errors import Conflict, InvalidInput, NotFound, pydantic_fields
from agentsite.request_transaction import service_atomic
from observability import metrics, tracing
from runs import queue, registry
from runs.models import AgentRun, AuditLog, Conversation, Message
from runs.signals import run_finished
from runs.sql import Write, insert_of, run_lock, run_update, writes_together
from streams.publish import run_ended_on_commit

log = logging.getLogger(__name__)
Status = AgentRun.Status
# The worker's task, by name: `execution.tasks` defines it. The name predates the
# package and stays, so messages already queued under it keep working.
EXECUTE_TASK = "runs.tasks.run_execute"


def run_locked(pk: Any) -> AgentRun | None:
    """The run ``pk``, its row locked until the caller's transaction ends (None: no such
    run): the first read of a decision's, a claim's and a cancel's transaction."""
    return run_lock(pk)  # plain SQL: the lock every segment pays (runs.sql)


def _label(actor: Any) -> str:
    if actor is None:
        return "system:worker"
    return getattr(actor, "username", str(actor))


def audit(*, run: AgentRun, action: str, actor: Any = None, from_status: str = "",
          to_status: str = "", interrupt_ref: str = "", payload: Any = None,
          surface: str = "") -> AuditLog:
    row = audit_row(run=run, action=action, actor=actor, from_status=from_status,
                    to_status=to_status, interrupt_ref=interrupt_ref, payload=payload,
                    surface=surface)
    row.save(force_insert=True)
    metrics.audits_recorded([row])
    return row


def audit_row(*, run: AgentRun, action: str, actor: Any = None, from_status: str = "",
              to_status: str = "", interrupt_ref: str = "", payload: Any = None,
              surface: str = "") -> AuditLog:
    """An audit row not yet saved: a transaction's rows go in with one INSERT
    (``audits_save`` or ``run_transition(audits=...)``), in the order given."""
    return AuditLog(
        run=run, action=action, actor=actor if getattr(actor, "pk", None) else None,
        actor_label=_label(actor), from_status=from_status, to_status=to_status,
        interrupt_ref=interrupt_ref, payload=payload, surface=surface,
    )


def audits_save(rows: Sequence[AuditLog]) -> None:
    if rows:
        AuditLog.objects.bulk_create(rows)  # one INSERT, in the order given
        metrics.audits_recorded(rows)


def run_transition(*, run: AgentRun, to: str, actor: Any = None, payload: Any = None,
                   fields: tuple[str, ...] = (), surface: str = "",
                   audits: Sequence[AuditLog] = (), notify: bool = True,
                   also: Sequence[Write] = ()) -> None:
    """Move a locked run to ``to`` and record it. Caller holds the row lock.

    ``audits``: the transaction's other audit rows, inserted before the transition's own
    in the same statement; ``also``: its other UPDATEs, run in that statement too
    (``runs.sql.writes_together``). ``notify``: False when the caller knows that nobody
    would be told of the run's end (no notification task)."""
    before = run.status
    run.status = to
    also = list(also)
    if to in AgentRun.FINISHED:
        run.finished_at = timezone.now()
    if to in AgentRun.FINISHED and notify:
        # The hitl layer (above) tells the assignees or the requester, on commit; its
        # outbox row joins this change's statement (``writes``).
        run_finished.send(sender=AgentRun, run=run, writes=also)
    # One statement: the run's row and the audit rows (runs.sql).
    run_update(run=run, fields=["status", "finished_at", *fields, *_stale_cleared(run)],
               also=also, audits=[*audits, audit_row(run=run, action=AuditLog.Action.RUN_STATUS,
                                          actor=actor, from_status=before, to_status=to,
                                          payload=payload, surface=surface)])
    if to in AgentRun.FINISHED:
        run_ended_on_commit(run.id)  # its event counter now expires with its events
        if run.runs_waiting and before in AgentRun.ACTIVE:
            queue.run_next_queue(ended=run)  # the thread goes to the oldest waiting run


def _stale_cleared(run: AgentRun) -> list[str]:
    """Clear what describes a state the run has left: the retry's time and reason belong
    to ``retrying``, the technical detail of a failure to ``retrying`` and ``failed``
    (the audit rows keep both). Returns the fields changed."""
    cleared = []
    if run.status != Status.RETRYING and (run.retry_at is not None or run.retry_reason):
        run.retry_at, run.retry_reason = None, ""
        cleared += ["retry_at", "retry_reason"]
    if run.status not in (Status.RETRYING, Status.FAILED) and run.error_detail:
        run.error_detail = ""
        cleared.append("error_detail")
    return cleared


def run_enqueue_on_commit(run: AgentRun, *, audits: Sequence[AuditLog] = ()) -> None:
    """Enqueue the run's next segment after commit. Caller holds the run's row lock.

    The committed status (queued / resuming) is itself the durable record that the run
    is owed a task: if the broker is down the send is only logged, the caller's change
    stands (no 5xx hides it), and the reaper (``execution.reaper``) sends the task again
    once the run has waited ``AGENTSITE_REQUEUE_AFTER_SECONDS``.

    The task carries the number of segments run so far, so a stale or duplicate
    delivery can tell that its segment was already taken (``execution.lifecycle.run_claim``).

    ``audits``: the transaction's audit rows not yet saved, inserted here.
    """
    audits_save(audits)
    _enqueue_on_commit(run)


def run_resume(*, run: AgentRun, actor: Any, surface: str,
               audits: Sequence[AuditLog], also: Sequence[Write] = ()) -> None:
    """A locked paused run whose questions are all answered resumes: ``resuming`` (its
    audit row inserted with ``audits``, the transaction's other rows, and ``also``, its
    other UPDATEs, in one statement), its next segment enqueued on commit for a worker."""
    rows = [*audits, audit_row(run=run, action=AuditLog.Action.RUN_STATUS, actor=actor,
                               from_status=run.status, to_status=Status.RESUMING,
                               surface=surface)]
    run.status = Status.RESUMING
    run_update(run=run, fields=["status"], audits=rows, also=also)  # one statement (runs.sql)
    _enqueue_on_commit(run)


def _enqueue_on_commit(run: AgentRun) -> None:
    run_id, done = str(run.id), run.segments
    transaction.on_commit(lambda: run_enqueue(run_id=run_id, segments_done=done))


def run_enqueue(*, run_id: str, segments_done: int, countdown: float = 0) -> bool:
    """Send the task for the run's next segment now (to run after ``countdown``
    seconds); False (logged) if the broker failed."""
    try:
        celery_app.send_task(EXECUTE_TASK, args=(run_id, segments_done),
                             countdown=countdown or None)
    except Exception as exc:  # any broker failure: the reaper sends it later
        log.warning("run %s: enqueue failed, the reaper will send it: %s", run_id, exc)
        return False
    return True


def _pending_ids(run: AgentRun) -> list[str]:
    # By the reverse relation: hitl (interrupts) is the layer above and is not imported.
    return list(run.interrupts.filter(status="pending").values_list("interrupt_id", flat=True))


def run_start(*, owner: Any, agent: str, input: dict[str, Any] | None = None,
              message: str = "", thread_id: str | None = None,
              create_thread: bool = False, surface: str = "",
              metadata: dict[str, Any] | None = None,
              stream_modes: Sequence[str] = (), enqueue: bool = False,
              webhook: str = "") -> AgentRun:
    """Create a queued run (and its conversation / messages) and enqueue it on commit.

    ``create_thread``: a ``thread_id`` the owner has no conversation for yet starts a
    new conversation with that id (AG-UI clients choose their own thread ids).
    ``metadata``: the client's, kept on the run; ``stream_modes``: LangGraph stream modes
    the worker also publishes for this run (``AgentRun.stream_modes``). ``enqueue``: on
    a busy thread the run is made ``waiting`` behind the thread's run (``runs.queue``).
    ``webhook``: a URL the run is POSTed to when it ends (``AgentRun.webhook``).
    """
    spec, clean = _validated_input(agent, input)
    holder = None
    # Joins the request's transaction when a door opened one (agentsite.request_transaction).
    with service_atomic():
        if thread_id:
            conversation, created = _locked_thread(
                owner=owner, agent=agent, thread_id=thread_id, create=create_thread,
                title=message or agent)
            if not created and enqueue:
                holder = queue.holder_flag(conversation=conversation)
            elif not created:  # a thread made just now has no runs
                _check_thread_idle(conversation)
        writes: list[Write] = []
        if not thread_id:  # a new conversation: inserted with the run (ids made here)
            conversation = Conversation(owner=owner, agent=agent, title=(message or agent)[:200])
            writes.append(insert_of([conversation]))
        run = _create_run(owner=owner, conversation=conversation, spec=spec, clean=clean,
                          message=message, metadata=metadata, stream_modes=stream_modes,
                          status=Status.WAITING if holder else Status.QUEUED,
                          webhook=webhook, writes=writes)
        queued = audit_row(run=run, action=AuditLog.Action.RUN_STATUS, actor=owner,
                           to_status=run.status, surface=surface,
                           payload={"input": run.input, "message": message,
                                    **(queue.waiting_behind(holder) if holder else {})})
        try:
            # One statement: the conversation, the run, its messages and its audit row.
            # No savepoint: the conversation is locked and idle (or new), so this is a
            # last guard, and its error ends the transaction, which run_start leaves with
            # the Conflict.
            writes_together(writes=writes, audits=[queued])
        except IntegrityError:
            raise Conflict("thread has an unfinished run", code="thread_busy") from None
        if holder is None:  # else its task is sent when the holder ends
            _enqueue_on_commit(run)
    tracing.request_attributes(run_id=run.id, user_id=owner.pk)  # the request's span
    return run


def _validated_input(agent: str, input: dict[str, Any] | None) -> tuple[Any, BaseModel]:
    spec = registry.get(agent)
    if spec is None:
        raise NotFound(f"unknown agent {agent!r}", code="unknown_agent")
    try:
        return spec, spec.input_model.model_validate(input or {})
    except ValidationError as err:
        raise InvalidInput(f"invalid input for agent {agent!r}",
                           fields={"input": pydantic_fields(err, root="input")}) from None


def _locked_thread(*, owner: Any, agent: str, thread_id: str, create: bool,
                   title: str) -> tuple[Conversation, bool]:
    """The owner's conversation ``thread_id``, locked (created when ``create``), and
    whether it was created here."""
    try:
        thread_uuid: uuid.UUID | None = uuid.UUID(str(thread_id))
    except ValueError:
        thread_uuid = None
    # At most one row (by primary key): no ORDER BY / LIMIT to compile, as first() would.
    conversation = (next(iter(Conversation.objects.select_for_update()
                              .filter(pk=thread_uuid, owner=owner)), None)
                    if thread_uuid else None)
    created = False
    if conversation is None and create and thread_uuid is not None:
        try:
            # No savepoint (two statements fewer): nothing is written before it, so its
            # error (the id is someone else's thread, or a concurrent start of this one
            # made it first) ends the transaction, which run_start leaves with the 404.
            conversation = Conversation.objects.create(
                id=thread_uuid, owner=owner, agent=agent, title=title[:200])
        except IntegrityError:
            conversation = None
        created = conversation is not None
    if conversation is None:
        raise NotFound(f"thread {thread_id!r} not found", code="unknown_thread")
    if not conversation.agent:
        # Made empty (``runs.threads.conversation_create``): its first run names its agent.
        conversation.agent = agent
        conversation.save(update_fields=["agent", "updated_at"])
    elif conversation.agent != agent:
        raise Conflict(f"thread belongs to agent {conversation.agent!r}", code="agent_mismatch")
    return conversation, created


def _check_thread_idle(conversation: Conversation) -> None:
    # Locked conversation row: two starts on one thread serialise here.
    active = conversation.runs.filter(status__in=AgentRun.ACTIVE).first()
    if active is not None:
        raise Conflict(
            f"thread has an unfinished run {active.id} ({active.status}); "
            "answer or cancel it first",
            code="thread_busy",
            extra={"run_id": str(active.id), "pending_interrupt_ids": _pending_ids(active)},
        )


def _create_run(*, owner: Any, conversation: Conversation, spec: Any, clean: BaseModel,
                message: str, metadata: dict[str, Any] | None = None,
                stream_modes: Sequence[str] = (), status: str = Status.QUEUED,
                webhook: str = "", writes: list[Write]) -> AgentRun:
    # The ids are made here (UUID defaults), so the rows go in without reading any back:
    # the run with its assistant message's id, then both messages with the run's, their
    # INSERTs added to ``writes`` (rows that point at each other; Django's foreign keys
    # are checked at commit).
    assistant = Message(conversation=conversation, role=Message.Role.ASSISTANT, content="")
    run = AgentRun(owner=owner, conversation=conversation, agent=spec.name,
                   agent_version=spec.version, thread_id=conversation.thread_id,
                   input=clean.model_dump(mode="json"), assistant_message=assistant,
                   metadata=metadata or {}, stream_modes=list(stream_modes), status=status,
                   webhook=webhook)
    assistant.run = run
    # The user's text first: its created_at comes before the reply's.
    writes += [insert_of([run]), insert_of(
        ([Message(conversation=conversation, run=run, role=Message.Role.USER,
                  content=message)] if message else []) + [assistant])]
    # The claim's initial state needs the user's text: no need to read it back.
    run.start_message = message
    return run


def run_stream_modes_add(*, run_id: Any, modes: Sequence[str]) -> None:
    """Ask the worker to publish these LangGraph stream modes too, from the run's next
    segment on (a client resuming a run started elsewhere asks at that segment's start).
    One UPDATE; the claim reads the list under the run's lock."""
    run = AgentRun.objects.filter(pk=run_id).only("stream_modes").first()
    if run is None or set(modes) <= set(run.stream_modes):
        return
    with transaction.atomic():
        # Locked: a concurrent add would otherwise drop one of the two lists.
        locked = run_locked(run_id)
        if locked is not None:
            locked.stream_modes = list(dict.fromkeys([*locked.stream_modes, *modes]))
            locked.save(update_fields=["stream_modes"])
