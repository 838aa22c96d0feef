"""Answer it differently: fork a new run from the checkpoint at which a past interrupt was
pending, with a new answer (issue 39).

The web side does everything that decides: who may fork (whoever could have answered the
original: ``can_decide`` and the interrupt's policy), whether the checkpoint still exists
(not pruned) and the agent's version still accepts it. Then one transaction makes the
new conversation and run, paused on a copy of the question (its policy with it), writes
the ``forked`` audit row on the original run, and answers the copy through the decision
service: the new answer is validated by the question's format, and four-eyes, quorum
and assignees apply again. The resume is enqueued on commit, as any answer's; the worker
copies the checkpoint into the new thread before it resumes (``execution.fork_copy``).
The original run and thread are never written.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from agentsite.errors import Conflict, Gone, NotFound
from execution.fork_points import ToolCall, interrupt_checkpoint, tool_calls_after
from execution.lifecycle import interrupts_answer
from hitl import policies
from hitl.decide import Answer
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide
from runs import registry
from runs.models import AgentRun, AuditLog, Conversation, Message
from runs.services import audit_row, audits_save

FORKABLE = (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.APPLIED)
# A fork run starts as if the segment that raised its question had run: its claim then
# resumes with the answer instead of starting from the input (``run_claim``'s first).
FORK_SEGMENTS = 1


@dataclass(frozen=True)
class ForkPoint:
    """What a person sees before confirming a fork."""

    interrupt: AgentInterrupt
    checkpoint_id: str
    tool_calls: list[ToolCall] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"interrupt": str(self.interrupt.pk), "run": str(self.interrupt.run_id),
                "interrupt_id": self.interrupt.interrupt_id,
                "checkpoint_id": self.checkpoint_id,
                "tool_calls_after": [c.as_json() for c in self.tool_calls]}


def _interrupt(actor: Any, interrupt_pk: Any) -> AgentInterrupt:
    try:
        pk = uuid.UUID(str(interrupt_pk))
    except ValueError:
        raise NotFound("interrupt not found") from None
    row = (AgentInterrupt.objects.select_related("run")
           .prefetch_related("assignees", "assigned_groups").filter(pk=pk).first())
    if row is None or not can_decide(actor, row.run):
        raise NotFound("interrupt not found")
    return row


def fork_point(*, actor: Any, interrupt_pk: Any) -> ForkPoint:
    """The checks a fork makes before anything is written, and what the person is shown:
    404 for an interrupt ``actor`` may not see, 403 when they could not have answered it,
    409 when it was not answered or the agent's version refuses it, 410 when the
    checkpoint was pruned. Reads the checkpointer: call it outside a transaction."""
    row = _interrupt(actor, interrupt_pk)
    run = row.run
    refused = policies.refusal(actor, row, run)
    if refused is not None:
        raise refused
    if row.status not in FORKABLE:
        raise Conflict(f"interrupt {row.interrupt_id} is {row.status}: only an answered "
                       "question can be answered differently", code="not_answered")
    spec = registry.get(run.agent)
    if spec is None or not spec.accepts_version(run.agent_version):
        current = spec.version if spec else "none"
        raise Conflict(
            f"run started on {run.agent} version {run.agent_version}; the deployed version "
            f"is {current} and does not declare it compatible, so its checkpoint cannot be "
            "forked", code="version_mismatch")
    saved = interrupt_checkpoint(run.thread_id, row.interrupt_id)
    if saved is None:
        raise Gone("the checkpoint at which this question was asked no longer exists (the "
                   "run's checkpoint history was pruned): it cannot be forked",
                   code="checkpoint_pruned")
    calls = tool_calls_after(thread_id=run.thread_id, run_id=str(run.id), fork_point=saved)
    return ForkPoint(interrupt=row, checkpoint_id=str(saved.config["configurable"]
                                                       ["checkpoint_id"]), tool_calls=calls)


@dataclass(frozen=True)
class Forked:
    run: AgentRun  # ``resuming``, or ``paused`` while a quorum waits for more votes
    point: ForkPoint


def interrupt_fork(*, actor: Any, interrupt_pk: Any, payload: Any, surface: str = "api",
                   stream_modes: Sequence[str] = ()) -> Forked:
    """Fork a new run from the question ``interrupt_pk`` with the answer ``payload``.
    Nothing is written when the answer or the person is refused. ``stream_modes``: as
    for ``run_start`` (the LangGraph API's client asks for them)."""
    point = fork_point(actor=actor, interrupt_pk=interrupt_pk)
    original = point.interrupt
    with transaction.atomic():
        fork = _fork_rows(actor=actor, point=point, surface=surface,
                          stream_modes=stream_modes)
        # The one answer entry point, as for any answer, in this transaction: a refused answer
        # (format, four-eyes, assignees, quorum vote) rolls the fork back with it.
        # Returned as it committed (with its questions): no re-read racing its segment.
        decided = interrupts_answer(actor=actor, run_id=fork.pk, surface=surface, answers=[
            Answer(interrupt_id=original.interrupt_id, payload=payload)]).run
    return Forked(run=decided, point=point)


def _fork_rows(*, actor: Any, point: ForkPoint, surface: str,
               stream_modes: Sequence[str]) -> AgentRun:
    """The fork's conversation, run (paused) and its copy of the question, with their
    audit rows and the ``forked`` row on the original run."""
    original, run = point.interrupt, point.interrupt.run
    conversation = Conversation.objects.create(
        owner_id=run.owner_id, agent=run.agent, forked_from=run,
        title=f"Fork of {run.conversation.title or run.agent}"[:200])
    assistant = Message(conversation=conversation, role=Message.Role.ASSISTANT, content="")
    # The original's owner owns the fork too: the copied policy (four-eyes) means what it
    # meant on the original, whoever forks.
    fork = AgentRun(owner_id=run.owner_id, conversation=conversation, agent=run.agent,
                    agent_version=run.agent_version, thread_id=conversation.thread_id,
                    status=AgentRun.Status.PAUSED, input=run.input, segments=FORK_SEGMENTS,
                    assistant_message=assistant, forked_from=run,
                    fork_interrupt_ref=original.interrupt_id,
                    fork_checkpoint_id=point.checkpoint_id, stream_modes=list(stream_modes))
    fork.save(force_insert=True)
    assistant.run = fork
    asked = run.messages.filter(role=Message.Role.USER).order_by("created_at").first()
    Message.objects.bulk_create(
        ([Message(conversation=conversation, run=fork, role=Message.Role.USER,
                  content=asked.content)] if asked else []) + [assistant])
    copy = AgentInterrupt.objects.create(
        run=fork, interrupt_id=original.interrupt_id, kind=original.kind,
        request=original.request, response_schema=original.response_schema,
        args_schemas=original.args_schemas,
        requester_may_decide=original.requester_may_decide,
        required_approvals=original.required_approvals,
        reject_policy=original.reject_policy, escalate_to=original.escalate_to)
    copy.assignees.set(original.assignees.all())
    copy.assigned_groups.set(original.assigned_groups.all())
    origin = {"run": str(run.pk), "interrupt": original.interrupt_id,
              "checkpoint_id": point.checkpoint_id}
    audits_save([
        audit_row(run=run, action=AuditLog.Action.FORKED, actor=actor, surface=surface,
                  interrupt_ref=original.interrupt_id,
                  payload={"fork_run": str(fork.pk), "checkpoint_id": point.checkpoint_id,
                           "tool_calls_after": [c.as_json() for c in point.tool_calls]}),
        audit_row(run=fork, action=AuditLog.Action.RUN_STATUS, actor=actor, surface=surface,
                  to_status=AgentRun.Status.PAUSED, payload={"forked_from": origin}),
        audit_row(run=fork, action=AuditLog.Action.INTERRUPT_STATUS, actor=actor,
                  surface=surface, interrupt_ref=copy.interrupt_id,
                  to_status=AgentInterrupt.Status.PENDING, payload=copy.request),
    ])
    return fork
