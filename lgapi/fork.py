"""A run create with ``checkpoint_id`` and ``command.resume``: LangGraph's "fork from a
checkpoint", as our fork (``execution.fork``). The checkpoint must be one at which a
question of the thread was pending and answered; the new answer goes through the same
checks and policies as any. Unlike LangGraph Server, the fork's run lives on a new thread
(its ``thread_id``): the original thread stays as it was.
"""

from __future__ import annotations

from typing import Any

from execution.fork import interrupt_fork
from hitl.models import AgentInterrupt
from lgapi.http import LgError
from lgapi.state import interrupts_of, latest
from runs.models import AgentRun, Conversation


def fork_from_checkpoint(user: Any, conversation: Conversation, checkpoint_id: str,
                         value: Any, modes: list[str]) -> AgentRun:
    """The new run forked from the question pending at ``checkpoint_id`` of the thread."""
    saved = latest(conversation.thread_id, checkpoint_id)
    if saved is None:
        raise LgError(404, f"Checkpoint {checkpoint_id} not found (or pruned)")
    asked = [i.get("id") for items in interrupts_of(saved).values() for i in items
             if isinstance(i, dict)]
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in asked:
        asked, value = [next(iter(value))], next(iter(value.values()))
    rows = list(AgentInterrupt.objects.filter(run__conversation=conversation,
                                              interrupt_id__in=asked))
    if len(rows) != 1:
        raise LgError(422, "A run from a checkpoint answers one question that was pending "
                      f"there; checkpoint {checkpoint_id} has {len(rows)}"
                      + (" (resume with a map {interrupt_id: value})" if rows else ""))
    return interrupt_fork(actor=user, interrupt_pk=rows[0].pk, payload=value,
                          surface="langgraph", stream_modes=modes).run
