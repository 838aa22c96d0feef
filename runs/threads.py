"""Writes for threads (conversations) made before any run: create, update metadata, delete.

The LangGraph Platform API creates a thread first and runs an assistant on it later, so a
conversation may exist with no agent yet: its first run names it (``run_start``).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db import IntegrityError, transaction

from agentsite.errors import Conflict, NotFound
from runs.models import AgentRun, Conversation


def conversation_create(*, owner: Any, thread_id: uuid.UUID | None = None,
                        metadata: dict[str, Any] | None = None,
                        if_exists: str = "raise") -> tuple[Conversation, bool]:
    """A new, empty conversation of ``owner`` (with the id given, if any), and whether it
    was made here. ``if_exists="do_nothing"`` gives back the owner's existing one; an id
    taken by someone else is refused like one taken by the owner (no probing)."""
    if thread_id is not None:
        found = Conversation.objects.filter(pk=thread_id).first()
        if found is not None:
            if if_exists == "do_nothing" and found.owner_id == owner.pk:
                return found, False
            raise Conflict(f"thread {thread_id} already exists", code="thread_exists")
    try:
        with transaction.atomic():
            conversation = Conversation.objects.create(
                id=thread_id or uuid.uuid4(), owner=owner, agent="",
                metadata=metadata or {})
    except IntegrityError:  # made by a concurrent create
        raise Conflict(f"thread {thread_id} already exists", code="thread_exists") from None
    return conversation, True


def conversation_update(*, actor: Any, conversation_id: Any,
                        metadata: dict[str, Any]) -> Conversation:
    """Merge ``metadata`` into the owner's conversation's (keys given replace theirs)."""
    with transaction.atomic():
        # Locked: two updates of one thread's metadata merge one after the other.
        conversation = (Conversation.objects.select_for_update()
                        .filter(pk=conversation_id, owner=actor).first())
        if conversation is None:
            raise NotFound("thread not found", code="unknown_thread")
        conversation.metadata = {**conversation.metadata, **metadata}
        conversation.save(update_fields=["metadata", "updated_at"])
    return conversation


def conversation_delete(*, actor: Any, conversation_id: Any) -> None:
    """Delete the owner's conversation, only while it has no run: a run's audit rows are
    append-only, and they go with the run."""
    with transaction.atomic():
        # Locked: a run starting on the thread (run_start locks it too) waits or wins.
        conversation = (Conversation.objects.select_for_update()
                        .filter(pk=conversation_id, owner=actor).first())
        if conversation is None:
            raise NotFound("thread not found", code="unknown_thread")
        if AgentRun.objects.filter(conversation=conversation).exists():
            raise Conflict("a thread with runs keeps its history and audit trail; "
                           "it cannot be deleted", code="thread_has_runs")
        conversation.delete()
