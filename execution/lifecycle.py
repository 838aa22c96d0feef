"""A run's life in the worker: claim a segment, then pause, finish or fail it; and cancel.

Each is one transaction that locks the run first (then its interrupts), writes an
audit row for every status change, and publishes the AG-UI closing events on commit
(``agui.outcomes``). The graph itself runs between claim and pause / finish, outside
any transaction (``execution.executor``).
"""

from __future__ import annotations

import logging
import uuid
from collections import namedtuple
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agentsite.errors import Conflict, NotFound
from agentsite.request_transaction import service_atomic
from agui import outcomes
from agui.events import custom, run_error, run_started
from execution import history
from execution.retries import Failure, backoff_seconds
from execution.stop import stop_on_commit
from hitl import lifecycle as interrupts
from hitl import notify
from hitl import sql as hitl_sql
from hitl.decide import Answer, interrupts_decide
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide
from hitl.sql import UNAPPLIED
from runs import registry
from runs.models import AgentRun, AuditLog, Message, SegmentUsage
from runs.services import run_enqueue, run_locked, run_transition
from runs.sql import MESSAGES, START_MESSAGE, Related, Write, append_write, run_lock
from streams.publish import publish_on_commit, published_together

log = logging.getLogger(__name__)
Status = AgentRun.Status
LEASE_FIELDS = ("lease_owner", "lease_expires_at")
# A retry's task may arrive this much before its ``retry_at`` (clocks, countdown rounding).
RETRY_EARLY_SECONDS = 1.0
RETRYING_EVENT = "agentsite.retrying"
# A run in these has given its answers to a segment (the claim read them): they were used.
ANSWERS_USED = (Status.RUNNING, Status.RETRYING)


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
    # Those of them answered (not cancelled): marked applied when the segment ends.
    decided_ids: tuple[str, ...] = ()
    # The claim's lease token (AgentRun.lease_owner while this segment holds the run).
    lease: str = ""
    # Another claim held this segment and its lease lapsed (its worker died): carry on
    # from the segment's last checkpoint.
    takeover: bool = False
    # Segments the run had before this one (what its task carries as ``segments_done``).
    segments_done: int = 0
    # LangGraph stream modes its starting client asked for (``execution.stream_modes``).
    stream_modes: tuple[str, ...] = ()
    # A fork run (``execution.fork``): the original thread's checkpoint its thread starts
    # from, copied before its first segment (``execution.fork_copy``).
    fork_checkpoint: str = ""


@dataclass(frozen=True)
class PendingInterrupt:
    interrupt_id: str
    request: Any  # the value as raised (any JSON)
    response_schema: dict[str, Any] | None = None  # the Interrupt's, when it has one
    # Argument schemas of the tools it names, by name (``execution.tool_schemas``).
    args_schemas: dict[str, Any] | None = None


def run_claim(*, run_id: str, segments_done: int | None = None, lease: str = "",
              worker: str = "") -> Segment | None:
    """Mark a queued / resuming run running under a fresh lease and return what to
    execute, or None.

    This is where a run resumes: the answers not yet applied become the segment's
    ``Command(resume=...)`` value.

    ``segments_done`` is what the run had when this task was enqueued: a task whose
    segment was already claimed (a duplicate, or a stale redelivery) finds another
    count and does nothing. A ``running`` run on that same segment is taken over only
    when its lease has lapsed (its worker stopped renewing it: dead, not slow), or by
    the retry of the claim that holds it (``lease``).
    """
    now = timezone.now()
    with transaction.atomic():
        # Its commit does not wait for the WAL flush (runs.sql.CLAIM_LOCK_SQL says why);
        # the answers to resume with (locked) and the start's text are read in the lock's
        # statement.
        run = run_lock(uuid.UUID(str(run_id)), claim=True, related=(UNAPPLIED, START_MESSAGE))
        if run is None:
            return None
        # Locked: of two deliveries of one task only the first sees its segment unclaimed.
        expected = run.segments if segments_done is None else segments_done
        fresh = run.status in (Status.QUEUED, Status.RESUMING) and run.segments == expected
        takeover = (run.status == Status.RUNNING and run.segments == expected + 1
                    and ((lease and run.lease_owner == lease) or lease_lapsed(run, now)))
        # A retry goes on with the segment that failed, from its last checkpoint, as a
        # takeover does; not before it is due (an early task is sent again by the reaper).
        retry = (run.status == Status.RETRYING and run.segments == expected + 1
                 and (run.retry_at is None
                      or run.retry_at <= now + timedelta(seconds=RETRY_EARLY_SECONDS)))
        if not (fresh or takeover or retry):
            return None
        return _claim_locked(run, first=expected == 0, fresh=fresh, worker=worker, now=now)


def _claim_locked(run: AgentRun, *, first: bool, fresh: bool, worker: str,
                  now: datetime) -> Segment:
    # No question exists before the first segment's pause: nothing to read for it.
    answered = [] if first else interrupts.interrupts_to_apply(run)
    resume = interrupts.resume_value(answered) if answered else None
    # The first segment starts from the input, also when taken over before its
    # first checkpoint (the executor decides from the checkpoint).
    initial = _initial_state(run) if first and not answered else None
    previous = run.lease_owner
    run.lease_owner = f"{worker or 'worker'}/{uuid.uuid4().hex[:16]}"[-200:]
    run.lease_expires_at = now + timedelta(seconds=settings.AGENTSITE_LEASE_SECONDS)
    if fresh:
        run.segments += 1
        run_transition(run=run, to=Status.RUNNING,
                       fields=("segments", "lease_owner", "lease_expires_at"))
    elif run.status == Status.RETRYING:  # the failed segment, again
        run.retry_at = None
        run_transition(run=run, to=Status.RUNNING,
                       fields=("retry_at", "lease_owner", "lease_expires_at"))
    else:  # the same segment, now ours: no new status, no audit row
        log.warning("run %s: segment %d taken over (lease of %r)", run.id, run.segments,
                    previous)
        run.save(update_fields=["lease_owner", "lease_expires_at", "updated_at"])
    # From the claim's commit on, the run's channel takes this segment's events only
    # (streams.storage.SEND_LUA's fence): a segment it supersedes publishes no more. A
    # fresh segment's RUN_STARTED goes in the same command, on the same commit (a
    # takeover's or a retry's catch-up is the executor's, from the checkpoints).
    started = [run_started(thread_id=run.thread_id, run_id=str(run.id))] if fresh else []
    publish_on_commit(run.id, started, fence=("claim", run.lease_owner))
    return Segment(run_id=str(run.id), agent=run.agent, thread_id=run.thread_id,
                   assistant_message_id=str(run.assistant_message_id), resume=resume,
                   initial_state=initial, interrupt_ids=tuple(a.interrupt_id for a in answered),
                   decided_ids=tuple(a.interrupt_id for a in answered
                                     if a.status == AgentInterrupt.Status.DECIDED),
                   lease=run.lease_owner, takeover=not fresh, segments_done=run.segments - 1,
                   stream_modes=tuple(run.stream_modes or ()),
                   fork_checkpoint=run.fork_checkpoint_id)


def lease_lapsed(run: AgentRun, now: datetime) -> bool:
    """No live claim holds the run's segment (released, or not renewed in time)."""
    return (not run.lease_owner or run.lease_expires_at is None
            or run.lease_expires_at <= now)


def lease_renew(segment: Segment) -> bool:
    """Extend the segment's lease; False when the run is no longer ours to run
    (cancelled, failed, or taken over after our lease lapsed)."""
    until = timezone.now() + timedelta(seconds=settings.AGENTSITE_LEASE_SECONDS)
    return AgentRun.objects.filter(pk=segment.run_id, status=Status.RUNNING,
                                   lease_owner=segment.lease).update(
        lease_expires_at=until) == 1


def segment_held(segment: Segment) -> bool:
    """The run is still running on this segment's lease (checked between graph steps)."""
    return AgentRun.objects.filter(pk=segment.run_id, status=Status.RUNNING,
                                   lease_owner=segment.lease).exists()


@dataclass(frozen=True)
class Tokens:
    """What a segment's model calls used (``execution.usage.UsageCounter``)."""

    model_name: str
    calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int


def usage_record(*, segment: Segment, tokens: Tokens) -> None:
    """Record a segment's token usage and add it to its run's totals, on its own: for a
    segment that did not end with a pause or finish (those record it in their own
    transaction). The tokens were spent whatever became of the segment."""
    with transaction.atomic():
        _usage_add(segment, tokens)


def _usage_add(segment: Segment, tokens: Tokens) -> None:
    SegmentUsage.objects.create(
        run_id=segment.run_id, segment=segment.segments_done + 1,
        model_name=tokens.model_name, calls=tokens.calls, input_tokens=tokens.input_tokens,
        output_tokens=tokens.output_tokens, total_tokens=tokens.total_tokens)
    AgentRun.objects.filter(pk=segment.run_id).update(
        input_tokens=F("input_tokens") + tokens.input_tokens,
        output_tokens=F("output_tokens") + tokens.output_tokens,
        total_tokens=F("total_tokens") + tokens.total_tokens,
        model_name=tokens.model_name)


def _initial_state(run: AgentRun) -> dict[str, Any]:
    spec = registry.get(run.agent)
    # Set by run_start on the run it made, and read by the claim's lock (runs.sql).
    text = getattr(run, "start_message", None)
    if text is None:
        text = (Message.objects.filter(run_id=run.pk, role=Message.Role.USER)
                .values_list("content", flat=True).first()) or ""
    return spec.start_state(spec.input_model.model_validate(run.input), text)


# One of the conversation's messages, as a segment's end reads them with the run's lock
# (``runs.sql.MESSAGES``): what ``agui.events.messages_snapshot`` reads.
MessageRow = namedtuple("MessageRow", "id role content")


def _lock_running(segment: Segment, facts: Sequence[Related]) -> AgentRun | None:
    """Lock the segment's run, with ``facts`` (what the notifications need to know,
    ``hitl.sql``: a pause, whether a new question reaches anyone; a finish, whether its
    end does) and the conversation's messages read in the lock's statement; None when
    the segment no longer holds it."""
    run = run_lock(uuid.UUID(segment.run_id), related=(*facts, MESSAGES))
    if run is None:
        raise AgentRun.DoesNotExist(f"run {segment.run_id} is gone")
    # Locked: a cancel may have landed while the graph ran (its status wins), or our
    # lease lapsed and another worker took the segment over (its claim wins).
    if run.status != Status.RUNNING or run.lease_owner != segment.lease:
        return None
    run.lease_owner, run.lease_expires_at = "", None
    return run


def _close_segment(run: AgentRun, segment: Segment, text: str, audits: list[AuditLog],
                   writes: list[Write]) -> list[Any]:
    """Mark the answers applied (their UPDATE to ``writes``, for the run's status change
    to send) and append the segment's text; return the conversation's messages as this
    transaction leaves them (rows with ``id``, ``role``, ``content``: what
    ``MESSAGES_SNAPSHOT`` shows, without building model instances)."""
    now = timezone.now()
    interrupts.interrupts_apply(run=run, interrupt_ids=segment.interrupt_ids,
                                decided_ids=segment.decided_ids, now=now, audits=audits,
                                writes=writes)
    messages = [MessageRow(uuid.UUID(m["id"]), m["role"], m["content"])
                for m in run.conversation_messages or ()]
    if text and run.assistant_message_id:
        # Output after a resume continues the run's original assistant message: an UPDATE
        # appending in the database (no read-modify-write to race), sent with the run's
        # status change (``writes``). The list shows it as that leaves it: under the run's
        # lock only this run's segments write its assistant message.
        writes.append(append_write(message_id=run.assistant_message_id, text=text, now=now))
        messages = [m._replace(content=m.content + text)
                    if m.id == run.assistant_message_id else m for m in messages]
    return messages


def run_pause(*, segment: Segment, interrupts_raised: list[PendingInterrupt], text: str,
              state: dict[str, Any], before: Sequence[Any] = (),
              tokens: Tokens | None = None) -> AgentRun | None:
    """Store the graph's pending interrupts and pause the run; publish on commit
    (``before``: the segment's last live events, sent in the same batch; ``tokens``:
    the segment's usage, recorded with the pause so a paused run shows its totals)."""
    requests = [(i.interrupt_id, i.request, i.response_schema, i.args_schemas)
                for i in interrupts_raised]
    # One event store command on the commit: the closing events, the queue's notices.
    with interrupts.raised_again_refused(), transaction.atomic(), published_together():
        # The standing approvals come with the lock: they may answer the new questions.
        run = _lock_running(segment, (*hitl_sql.QUESTION_FACTS, hitl_sql.STANDING))
        if run is None:
            return None
        if tokens is not None:
            _usage_add(segment, tokens)
        # Registered first: the segment's end goes out before the notices and tasks below.
        events = publish_on_commit(run.id, before)
        audits: list[AuditLog] = []
        writes: list[Write] = []
        messages = _close_segment(run, segment, text, audits, writes)
        rows = interrupts.interrupts_open(run=run, requests=requests, audits=audits,
                                          writes=writes)
        run_transition(run=run, to=Status.PAUSED, fields=LEASE_FIELDS, audits=audits,
                       also=writes)
        events.extend(outcomes.segment_end(run, state=state, messages=messages,
                                           pending=rows))
        # Standing approvals answered every question: resume (enqueued after the events).
        interrupts.run_resume_if_answered(run=run, rows=rows)
    return run


def run_finish(*, segment: Segment, status: str, result: Any, text: str,
               state: dict[str, Any], reason: str = "", before: Sequence[Any] = (),
               tokens: Tokens | None = None) -> AgentRun | None:
    """End a run (completed / rejected / blocked / cancelled) with its result; publish on
    commit (``before`` and ``tokens`` as in ``run_pause``)."""
    # One event store command on the commit: the closing events, the counter's expiry.
    with transaction.atomic(), published_together():
        run = _lock_running(segment, hitl_sql.RUN_FACTS)
        if run is None:
            return None
        if tokens is not None:
            _usage_add(segment, tokens)
        # Registered first, as in ``run_pause``: before the run-finished notice's task.
        events = publish_on_commit(run.id, before)
        audits: list[AuditLog] = []
        writes: list[Write] = []
        messages = _close_segment(run, segment, text, audits, writes)
        run.result = result
        if reason:
            run.error = reason
        run_transition(run=run, to=status, fields=("result", "error", *LEASE_FIELDS),
                       audits=audits, notify=notify.anyone_for_end(run), also=writes)
        events.extend(outcomes.segment_end(run, state=state, messages=messages))
        if status != Status.COMPLETED:
            history.repair_on_commit(run)  # tool calls it left unanswered (execution.history)
    return run


def run_fail(*, run_id: str, error: str, code: str = "agent_error",
             segment: Segment | None = None, detail: str = "") -> AgentRun | None:
    """Fail an unfinished run and close its open questions; publish RUN_ERROR on commit.

    ``error``: plain words for a person; ``detail``: the technical account (exception,
    provider answer). ``segment``: the failing segment's claim; if its lease was lost
    (another worker took the segment over) the run is not ours to fail."""
    with transaction.atomic():
        run = run_locked(uuid.UUID(str(run_id)))
        # Locked: a cancel, or the segment's own finish, may have ended it first (theirs
        # stands).
        if run is None or run.is_finished:
            return None
        if segment is not None and segment.lease and run.lease_owner != segment.lease:
            return None
        interrupts.interrupts_cancel_pending(run=run, actor=None)
        if run.status not in ANSWERS_USED:
            interrupts.interrupts_close_decided(run=run, actor=None)
        # Else the failed segment was given its answers: they stay decided, and a retry
        # gives them again (the graph takes them only if it had not yet).
        run.error = error[:10000]
        run.error_detail = (detail or error)[:10000]
        run.lease_owner, run.lease_expires_at, run.retry_at = "", None, None
        run_transition(run=run, to=Status.FAILED, payload={"code": code},
                       fields=("error", "error_detail", "retry_at", *LEASE_FIELDS))
        history.repair_on_commit(run)  # tool calls it left unanswered (execution.history)
        # A standalone end (RUN_STARTED, RUN_ERROR): the event store ends the segment's
        # AG-UI run instead when one is open (streams.storage.SEND_LUA, ``end``); a
        # paused or waiting run has none.
        publish_on_commit(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                                   run_error(message=error[:2000], code=code)],
                          fence=("end", ""))
    return run


def run_retry_later(*, segment: Segment, failure: Failure) -> str:
    """The segment failed transiently (``execution.retries``): the run waits
    ``retrying`` and its next attempt, due after the backoff, goes on from the last
    checkpoint. Listeners are told on commit (a CUSTOM event; the AG-UI run stays open:
    the next attempt continues it, as a takeover does).

    Returns ``retrying``; ``exhausted`` when the run's retries are used up (the caller
    fails it); ``gone`` when the segment no longer holds the run (cancelled meanwhile, or
    taken over)."""
    now = timezone.now()
    with transaction.atomic():
        run = run_locked(uuid.UUID(segment.run_id))
        if run is None or run.status != Status.RUNNING or run.lease_owner != segment.lease:
            return "gone"
        if run.retries >= settings.MODEL_RUN_RETRIES:
            return "exhausted"
        delay_seconds = backoff_seconds(run.retries, failure.retry_after)
        reason, detail = failure.reason, failure.detail
        run.retries += 1
        run.retry_at = now + timedelta(seconds=delay_seconds)
        run.retry_reason = reason[:200]
        run.error_detail = detail[:10000]
        run.lease_owner, run.lease_expires_at = "", None
        run_transition(run=run, to=Status.RETRYING, payload={
            "code": "provider_retry", "attempt": run.retries, "delay_seconds": delay_seconds,
            "reason": run.retry_reason, "detail": detail[:2000]},
            fields=("retries", "retry_at", "retry_reason", "error_detail", *LEASE_FIELDS))
        publish_on_commit(run.id, [retrying_event(run, delay_seconds)])
        _enqueue_retry_on_commit(run, delay_seconds)
    return "retrying"


def retrying_event(run: AgentRun, delay_seconds: float) -> Any:
    """The AG-UI CUSTOM event every surface shows while a run waits for its retry."""
    return custom(RETRYING_EVENT, {
        "attempt": run.retries, "of": settings.MODEL_RUN_RETRIES,
        "delaySeconds": round(delay_seconds, 3),
        "retryAt": run.retry_at.isoformat() if run.retry_at else None,
        "reason": run.retry_reason})


def run_retry(*, actor: Any, run_id: Any, surface: str = "api") -> AgentRun:
    """Continue a failed run from its last checkpoint (its owner, or a reviewer).

    Exactly once: under the run's lock only the first of concurrent calls finds it
    failed. A run whose thread has had a later run is not continued (its checkpoint is no
    longer the thread's latest)."""
    with service_atomic():  # joins a door's request transaction (agentsite.request_transaction)
        run = _locked_decidable_run(actor=actor, run_id=run_id)
        if run.status != Status.FAILED:
            raise Conflict(f"only a failed run can be retried; this one is {run.status}",
                           code="run_not_failed")
        if (AgentRun.objects.filter(thread_id=run.thread_id, created_at__gt=run.created_at)
                .exclude(pk=run.pk).exists()):
            raise Conflict("the conversation has gone on since this run failed; start a new "
                           "run instead", code="thread_moved_on")
        # The failure stays in the audit trail (its status row and this one's payload);
        # the run no longer shows it.
        failed = {"error": run.error, "error_detail": run.error_detail,
                  "attempt": run.attempt,
                  "failed_at": run.finished_at.isoformat() if run.finished_at else None}
        run.retry_at = timezone.now()
        run.retry_reason = "Retry requested"
        run.finished_at = None
        run.error = run.error_detail = ""
        # Counted: should it fail again, every surface says so ("attempt 2").
        run.manual_retries += 1
        run_transition(run=run, to=Status.RETRYING, actor=actor, surface=surface,
                       payload={"code": "retry_requested", "failed": failed,
                                "attempt": run.attempt},
                       fields=("retry_at", "retry_reason", "error", "error_detail",
                               "manual_retries"))
        _enqueue_retry_on_commit(run, 0)
    return run


def _enqueue_retry_on_commit(run: AgentRun, delay_seconds: float) -> None:
    # The failed segment again (``segments`` is not advanced): the claim takes it as a
    # retry. If the send is lost, the reaper sends it once it is overdue.
    run_id, done = str(run.id), run.segments - 1
    transaction.on_commit(lambda: run_enqueue(run_id=run_id, segments_done=done,
                                              countdown=delay_seconds), robust=True)


def run_cancel(*, actor: Any, run_id: Any, surface: str = "api") -> AgentRun:
    """Cancel an unfinished run (its owner, or a reviewer); its open questions with it.

    A running segment hears of it at once (``execution.stop``): its model calls in flight
    are cut, and it stops before its next graph step (``execution.executor``)."""
    with service_atomic():  # joins a door's request transaction (agentsite.request_transaction)
        run = _locked_decidable_run(actor=actor, run_id=run_id)
        # Locked: a decision or the worker finishing races with us; whoever locks first wins.
        if run.is_finished:
            raise Conflict(f"run is already {run.status}", code="run_finished")
        _cancel_locked(run, actor=actor, surface=surface)
    return run


def _cancel_locked(run: AgentRun, *, actor: Any, surface: str,
                   payload: dict[str, Any] | None = None) -> None:
    """Cancel ``run``, locked and unfinished, in the caller's transaction."""
    interrupts.interrupts_cancel_pending(run=run, actor=actor, surface=surface)
    interrupts.interrupts_close_decided(run=run, actor=actor, surface=surface,
                                        used=run.status in ANSWERS_USED)
    run.lease_owner, run.lease_expires_at = "", None
    run_transition(run=run, to=Status.CANCELLED, actor=actor, surface=surface,
                   fields=LEASE_FIELDS, payload=payload)
    history.repair_on_commit(run)  # tool calls it left unanswered (execution.history)
    # A running segment stops now, its model call in flight cut (execution.stop).
    stop_on_commit(run.id)
    # Listeners learn of the cancel now, not when a live segment next looks (a hung
    # model call may keep it for minutes); the fence keeps that segment off the
    # channel from here on.
    # The event store drops the standalone end's RUN_STARTED when a segment's AG-UI
    # run is open (streams.storage.SEND_LUA, ``close``).
    publish_on_commit(run.id, outcomes.standalone_end(run), fence=("close", ""))


@dataclass(frozen=True)
class Answered:
    """What an answer did (``interrupts_answer``): ``run``, as the decision or the cancel
    committed it, with its interrupts as ``run.interrupt_rows`` (what a surface shows of
    it needs no query, and no re-read races the segment that has just started)."""

    run: AgentRun

    @property
    def status(self) -> str:
        """The run's status now: ``resuming`` (every question answered), ``paused``
        (some still open), ``cancelled`` (a cancel with no decline ended the run)."""
        return self.run.status

    @property
    def run_cancelled(self) -> bool:
        return self.run.status == Status.CANCELLED

    @property
    def waiting(self) -> bool:
        """Questions of the run are still open: nothing resumes yet."""
        return self.run.status == Status.PAUSED


def interrupts_answer(*, actor: Any, run_id: Any, answers: list[Answer],
                      surface: str = "api") -> Answered:
    """Answer a run's interrupts: the one entry point of every surface (REST, AG-UI, the
    LangGraph API, the chat pages and the admin; the cards through ``hitl.card_answer``).

    ``hitl.decide.interrupts_decide`` checks (permission, status, version, policies,
    quorum, payload) and records the answers. A cancel of a question whose format has no
    decline cancels the run instead, in the same transaction under the run's lock (so no
    answer of someone else's lands between the two), audited as the actor's with the
    question named in the run's status row."""
    def cancel_instead(run: AgentRun) -> None:
        _cancel_locked(run, actor=actor, surface=surface, payload={
            "code": "question_cancelled",
            "interrupt_ids": [a.interrupt_id for a in answers if a.status == "cancelled"]})

    run = interrupts_decide(actor=actor, run_id=run_id, answers=answers, surface=surface,
                            cancel_run=cancel_instead)
    if run.status == Status.CANCELLED:
        run.interrupt_rows = list(AgentInterrupt.objects.filter(run=run))  # Meta.ordering
    return Answered(run)


def _locked_decidable_run(*, actor: Any, run_id: Any) -> AgentRun:
    try:
        run = run_locked(uuid.UUID(str(run_id)))
    except ValueError:
        run = None
    if run is None or not can_decide(actor, run):
        raise NotFound("run not found")
    return run
