"""Runs in a given state for the retry and usage tests (issue 28), written as the rows a
worker leaves (no provider involved): a failed or retrying run with its conversation and
messages, and the token usage of its segments.

A run made here has one segment and no checkpoint, so a retry's segment starts the agent
over from its input (``dev``: it pauses at its first question).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from runs import registry
from runs.models import AgentRun, Conversation, Message, SegmentUsage

RATE_LIMITED = "The model provider is rate-limiting requests (429)"
PLAIN_ERROR = "The model provider returned an error (500). You can retry."
DETAIL = ("openai.InternalServerError: Error code: 500 - {'error': {'message': "
          "'upstream <b>exploded</b>', 'type': 'server_error'}}")


def make_run(owner: Any, status: str, *, agent: str = "dev", conversation: Any = None,
             usage: list[tuple[int, int]] = (), model: str = "gpt-4o-mini",
             **fields: Any) -> AgentRun:
    """A run of ``owner`` in ``status`` (fields as given), with ``usage``: one SegmentUsage
    row per (input, output) pair and the run's totals their sums."""
    spec = registry.get(agent)
    if conversation is None:
        conversation = Conversation.objects.create(owner=owner, agent=agent, title="help me")
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent=agent,
                                  agent_version=spec.version,
                                  thread_id=str(conversation.id), status=status, segments=1,
                                  **fields)
    Message.objects.create(conversation=conversation, run=run, role="user", content="help me")
    reply = Message.objects.create(conversation=conversation, run=run, role="assistant",
                                   content="")
    run.assistant_message = reply
    if usage:
        for number, (inp, out) in enumerate(usage, start=1):
            SegmentUsage.objects.create(run=run, segment=number, model_name=model, calls=1,
                                        input_tokens=inp, output_tokens=out,
                                        total_tokens=inp + out)
        run.model_name = model
        run.input_tokens = sum(i for i, _ in usage)
        run.output_tokens = sum(o for _, o in usage)
        run.total_tokens = run.input_tokens + run.output_tokens
    if status in AgentRun.FINISHED:
        run.finished_at = timezone.now()
    run.save()
    return run


def failed_run(owner: Any, **fields: Any) -> AgentRun:
    return make_run(owner, AgentRun.Status.FAILED, error=PLAIN_ERROR, error_detail=DETAIL,
                    **fields)


def retrying_run(owner: Any, *, in_seconds: float = 20, retries: int = 2,
                 **fields: Any) -> AgentRun:
    return make_run(owner, AgentRun.Status.RETRYING, retries=retries,
                    retry_at=timezone.now() + timedelta(seconds=in_seconds),
                    retry_reason=RATE_LIMITED, error_detail=DETAIL, **fields)
