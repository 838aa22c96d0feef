"""A taken-over segment continues the AG-UI run its lost worker started.

The lost worker published ``RUN_STARTED`` and maybe opened a text message, tool calls
or steps, then died. A second ``RUN_STARTED`` inside that run would break the protocol
for every listener, so the new owner reads what was published, closes what is open and
goes on in the same AG-UI run.

The lost worker's text is the segment's too, though only its end (never written)
would have stored it: the steps it checkpointed are not run again, so their messages
are read back from the checkpoints it wrote (each tagged with the segment,
``SEGMENT_KEY``) and the new owner ends the segment with them (``lost_work``).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

import redis.exceptions
from ag_ui.core import BaseEvent
from langchain_core.messages import AIMessage
from langgraph.checkpoint.base import BaseCheckpointSaver

from agui.events import messages_snapshot, run_started
from agui.mapper import EventMapper
from agui.open_state import open_run
from runs.models import Message
from streams.keys import run_channel

log = logging.getLogger(__name__)
# Checkpoint metadata naming the run's segment that wrote it (LangGraph copies a
# config's ``metadata`` into every checkpoint's; the checkpointer's ``list`` filters on it).
SEGMENT_KEY = "agentsite_segment"


def segment_tag(run_id: str, segment: int) -> str:
    """The value of ``SEGMENT_KEY`` on the checkpoints of the run's ``segment``-th segment
    (every attempt at it: the first claim and any takeover)."""
    return f"{run_id}/{segment}"


@dataclass(frozen=True)
class Reopened:
    """What a taken-over segment publishes first, and the text of the run's assistant
    message that listeners already saw in this AG-UI run (``TEXT_MESSAGE_CONTENT``)."""

    events: list[BaseEvent]
    published_text: str = ""


@dataclass(frozen=True)
class LostWork:
    """What the lost attempts at a segment left in the checkpointer."""

    # A checkpoint of the segment exists (its input, at least, was stored).
    started: bool = False
    # The text of the assistant messages its checkpoints hold that the state did not
    # have when the segment began, as the stream mapper reads a message's text.
    text: str = ""


def lost_work(checkpointer: BaseCheckpointSaver, *, thread_id: str, tag: str,
              everywhere: bool = True) -> LostWork:
    """Read back what the segment tagged ``tag`` checkpointed before its worker died.

    Its messages are the AI messages in its latest checkpoint that were not in the state
    it started from: its first checkpoint's parent; or, when that first checkpoint holds
    the segment's input (``source: input``), the next one, where the input is applied
    and no node has run yet (the input's messages are not the agent's output).
    ``everywhere``: messages in any channel (what LangGraph's ``messages`` stream mode
    passes on), else only the ``messages`` channel (what the mapper reads from node
    updates)."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    # Newest first; a segment has a checkpoint per step, read only on a takeover.
    saved = list(checkpointer.list(config, filter={SEGMENT_KEY: tag}))
    if not saved:
        return LostWork()
    first = saved[-1]
    if (first.metadata or {}).get("source") == "input":
        if len(saved) < 2:
            return LostWork(started=True)  # no node ran
        before = saved[-2].checkpoint["channel_values"]
    elif first.parent_config:
        parent = checkpointer.get_tuple(first.parent_config)
        before = parent.checkpoint["channel_values"] if parent else {}
    else:
        before = {}
    known = _ai_messages(before, everywhere)
    ids = {m.id for m in known if m.id}
    new = [m for m in _ai_messages(saved[0].checkpoint["channel_values"], everywhere)
           if (m.id not in ids if m.id else m not in known)]
    reader = EventMapper("")  # the same text the live mapper would have given
    for message in new:
        reader.on_message(message)
    return LostWork(started=True, text=reader.text)


def _ai_messages(values: dict[str, Any], everywhere: bool) -> list[AIMessage]:
    found: list[AIMessage] = []
    for key, value in values.items():
        if key.startswith("__") or ":" in key or (not everywhere and key != "messages"):
            continue  # LangGraph's own channels (as ``checkpointer.thread_values``)
        for item in (value if isinstance(value, (list, tuple)) else [value]):
            if isinstance(item, AIMessage):
                found.append(item)
    return found


def reopen(run_id: str, *, thread_id: str, message_id: str = "") -> Reopened:
    """Events that let a taken-over segment publish on: closers of what the lost worker
    left open (``agui.open_state``), or ``RUN_STARTED`` if no AG-UI run is open on the
    channel; with the text the open run already carried for ``message_id``."""
    try:
        state = open_run(run_channel(run_id), text_of=message_id)
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        log.warning("run %s: cannot read its events (%s); starting a new AG-UI run",
                    run_id, exc)
        state = None
    if state is None:
        return Reopened([run_started(thread_id=thread_id, run_id=run_id)])
    return Reopened(state.closers(), state.published_text)


def restated(*, message_id: str, text: str) -> list[BaseEvent]:
    """``MESSAGES_SNAPSHOT`` of the conversation with the run's assistant message as it
    stands: its stored content, then ``text`` (what the segment keeps so far); nothing
    for a run without an assistant message.

    For a segment that goes on after an attempt whose text listeners saw but which will
    be streamed anew (a model call cut mid-stream runs again): without it every listener
    appends the repeat to the cut-off part ("…The tool said:Thanks. The tool said: …").
    A snapshot replaces the messages (AG-UI), so the new stream continues from it."""
    try:
        uuid.UUID(message_id)
    except ValueError:
        return []
    conversation = Message.objects.filter(pk=message_id).values("conversation_id")[:1]
    rows = list(Message.objects.filter(conversation_id=conversation)
                .values_list("id", "role", "content", named=True))
    return [messages_snapshot([row._replace(content=row.content + text)
                               if str(row.id) == message_id else row for row in rows])]
