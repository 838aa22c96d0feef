"""A fork's thread starts as a copy of one checkpoint of the original thread (worker only).

Before its first segment resumes, the checkpoint at which the forked question was pending
is written into the fork's new thread with the checkpointer's public ``put`` /
``put_writes``: same checkpoint id (so LangGraph's task and interrupt ids, which derive
from it, are the same and the resume map finds the question), no parent (the fork sees
the original history up to that point only, as its state), and the pending writes of
that step as they stood at the pause: the questions (``__interrupt__``) and what the
step's other tasks wrote, but neither the original answers (``__resume__``) nor what a
task that asked wrote after its answer (it runs again, with the fork's answer). The
original thread is only read.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from execution.lifecycle import Segment
from execution.recovery import SEGMENT_KEY
from runs.models import AgentRun

log = logging.getLogger(__name__)
RESUME = "__resume__"
INTERRUPT = "__interrupt__"
FORK_KEY = "agentsite_fork"


def _config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def fork_thread_seed(checkpointer: BaseCheckpointSaver, segment: Segment) -> bool:
    """Copy the fork's checkpoint into its thread unless the thread has one already (a
    retried or taken-over first segment); True when copied."""
    if checkpointer.get_tuple(_config(segment.thread_id)) is not None:
        return False
    source = (AgentRun.objects.filter(pk=segment.run_id)
              .values_list("forked_from__thread_id", flat=True).first())
    if not source:
        raise RuntimeError(f"fork run {segment.run_id}: its original run is gone")
    saved = checkpointer.get_tuple(_config(source, segment.fork_checkpoint))
    if saved is None:
        raise RuntimeError(f"fork run {segment.run_id}: checkpoint "
                           f"{segment.fork_checkpoint} of thread {source} is gone")
    checkpoint = saved.checkpoint
    target = _config(segment.thread_id, checkpoint["id"])
    # The writes first: the checkpoint's presence (tested above) means a complete copy.
    writes = saved.pending_writes or ()
    asked = {task_id for task_id, channel, _value in writes if channel == INTERRUPT}
    by_task: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in writes:
        if channel == RESUME or (task_id in asked and channel != INTERRUPT):
            continue  # the original's answers, and what they made, stay with it
        by_task[task_id].append((channel, value))
    for task_id, writes in by_task.items():
        checkpointer.put_writes(target, writes, task_id)
    # Not the original segment's tag (``recovery.SEGMENT_KEY``): no segment of this run
    # wrote it, and a takeover reads back only what its own segment wrote.
    metadata = {**{k: v for k, v in (saved.metadata or {}).items() if k != SEGMENT_KEY},
                FORK_KEY: {"thread_id": source, "checkpoint_id": checkpoint["id"]}}
    checkpointer.put(_config(segment.thread_id), checkpoint, metadata,
                     dict(checkpoint.get("channel_versions") or {}))
    log.info("fork run %s: thread %s seeded from checkpoint %s of thread %s",
             segment.run_id, segment.thread_id, checkpoint["id"], source)
    return True
