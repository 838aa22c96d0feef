"""Fencing: a superseded segment never writes to its thread again.

A segment is superseded when its run is cancelled, fails, waits for a retry, or is taken
over after its lease lapsed. Its worker may not know yet: a model call can hang for
minutes, and when it returns the segment would write a checkpoint over the thread's
newer history (a later run's exchange would vanish from the model's context). So every
checkpoint write of a segment first checks, under a share lock on the run's row, that
the run is still running on the segment's lease; the lock is held until the write is
done, so a cancel or a takeover (which lock the row for update) lands before the check or
after the write, never between. A refused write raises ``SegmentLost``: the segment
stops there. Events are fenced in the event store (``streams.storage.SEND_LUA``), the
business rows by the lease check of the segment's end (``execution.lifecycle``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from runs.models import AgentRun
from streams.db import release_db_connections

# Keys of a segment's config (``configurable``): whose writes are fenced, and on what.
RUN_KEY = "agentsite_run"
LEASE_KEY = "agentsite_lease"


class SegmentLost(Exception):
    """The run is no longer this segment's to run: cancelled, or taken over."""


def segment_config(*, run_id: str, lease: str) -> dict[str, str]:
    """The ``configurable`` entries that fence a segment's checkpoint writes."""
    return {RUN_KEY: run_id, LEASE_KEY: lease} if lease else {}


class FencedCheckpointer(BaseCheckpointSaver):
    """A checkpointer whose writes for a segment's config are fenced (module doc); reads,
    and writes without a segment (tests, tools), go straight to ``inner``."""

    def __init__(self, inner: BaseCheckpointSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    @property
    def config_specs(self) -> list:
        return self.inner.config_specs

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        return self.inner.list(config, **kwargs)

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        with fenced(config):
            return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        with fenced(config):
            self.inner.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    def get_next_version(self, current: Any, channel: None = None) -> Any:
        return self.inner.get_next_version(current, channel)


@contextmanager
def fenced(config: RunnableConfig) -> Iterator[None]:
    """Hold a share lock on the segment's run while the caller writes, or raise
    ``SegmentLost`` when the run is no longer the segment's."""
    configurable = config.get("configurable") or {}
    run_id, lease = configurable.get(RUN_KEY), configurable.get(LEASE_KEY)
    if not (run_id and lease):
        yield
        return
    try:
        # The write itself goes through the checkpointer's own connection; this
        # transaction only holds the run's row (FOR NO KEY UPDATE: it waits for, and
        # holds off, the cancel's and the claim's FOR UPDATE, not readers).
        with transaction.atomic():
            held = (AgentRun.objects.select_for_update(no_key=True)
                    .filter(pk=run_id, status=AgentRun.Status.RUNNING, lease_owner=lease)
                    .values_list("pk", flat=True).first())
            if held is None:
                raise SegmentLost(f"run {run_id}: the segment was superseded; write refused")
            yield
    finally:
        # LangGraph writes from short-lived threads: their connections go back now.
        release_db_connections()
