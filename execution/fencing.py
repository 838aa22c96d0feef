"""Fencing: a superseded segment never writes to its thread again.

A segment is superseded when its run is cancelled, fails, waits for a retry, or is taken
over after its lease lapsed. Its worker may not know yet: a model call can hang for
minutes, and when it returns the segment would write a checkpoint over the thread's
newer history (a later run's exchange would vanish from the model's context). So every
checkpoint write of a segment first checks, under a share lock on the run's row, that
the run is still running on the segment's lease, in the write's own transaction: a
cancel or a takeover (which lock the row for update) lands before the check or after the
write, never between. A refused write raises ``SegmentLost``: the segment
stops there. Events are fenced in the event store (``streams.storage.SEND_LUA``), the
business rows by the lease check of the segment's end (``execution.lifecycle``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.errors import DivisionByZero
from psycopg_pool import ConnectionPool

from runs.models import AgentRun

# Keys of a segment's config (``configurable``): whose writes are fenced, and on what.
RUN_KEY = "agentsite_run"
LEASE_KEY = "agentsite_lease"


class SegmentLost(Exception):
    """The run is no longer this segment's to run: cancelled, or taken over."""


def segment_config(*, run_id: str, lease: str) -> dict[str, str]:
    """The ``configurable`` entries that fence a segment's checkpoint writes."""
    return {RUN_KEY: run_id, LEASE_KEY: lease} if lease else {}


class FencedCheckpointer(BaseCheckpointSaver):
    """A PostgresSaver whose writes for a segment's config are fenced (module doc); reads,
    and writes without a segment (tests, tools), go straight to ``inner``.

    A fenced write is one transaction on a connection of the checkpointer's pool: the
    run's row is share-locked and checked, then the write joins the same transaction, so
    the check and the write commit together, or not at all (one statement more per
    write, no commit more, no round trip more; the pool's connections commit without
    waiting for the WAL flush, ``execution.checkpointer``)."""

    def __init__(self, inner: PostgresSaver) -> None:
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
        with self.fenced(config) as saver:
            return saver.put(config, checkpoint, metadata, new_versions)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        with self.fenced(config) as saver:
            saver.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    def get_next_version(self, current: Any, channel: None = None) -> Any:
        return self.inner.get_next_version(current, channel)

    @contextmanager
    def fenced(self, config: RunnableConfig) -> Iterator[BaseCheckpointSaver]:
        """A saver whose writes commit only while the segment holds its run (raises
        ``SegmentLost`` otherwise); the plain one for a config without a segment."""
        configurable = config.get("configurable") or {}
        run_id, lease = configurable.get(RUN_KEY), configurable.get(LEASE_KEY)
        pool = self.inner.conn
        if not (run_id and lease) or not isinstance(pool, ConnectionPool):
            yield self.inner
            return
        # One pipeline, one round trip: the check, then the write, up to one sync. With no
        # BEGIN, what a pipeline sends up to a sync is one implicit transaction (Postgres's
        # extended query protocol): the check's error (HOLD_SQL) aborts it, and the write
        # in it never commits. A check, then a write in a BEGIN / COMMIT block, each
        # waited for, took four round trips.
        with pool.connection() as conn, conn.pipeline() as pipe:
            # FOR SHARE: parallel writes of one segment do not wait for each other; a
            # cancel's or a claim's FOR UPDATE waits for the write, or the write for it.
            conn.execute(HOLD_SQL, (run_id, AgentRun.Status.RUNNING, lease))
            try:
                # The saver's writes join the pipeline and end with its sync.
                yield PostgresSaver(conn, pipe=pipe, serde=self.inner.serde)
            except psycopg.Error as exc:
                if _refused(exc):
                    raise SegmentLost(
                        f"run {run_id}: the segment was superseded; write refused") from None
                raise


def _refused(exc: BaseException | None) -> bool:
    """The check refused the write: its error, or the aborted pipeline it left (psycopg
    raises the check's error where it reads the answer, then ``PipelineAborted`` at the
    saver's sync, with the first as its context)."""
    while exc is not None:
        if isinstance(exc, DivisionByZero):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


# Fails (division by zero: no row held) unless the run still runs on the lease, so that
# the pipeline's implicit transaction is aborted with the write in it.
HOLD_SQL = (f"SELECT 1 / count(*) FROM (SELECT 1 FROM {AgentRun._meta.db_table} "
            "WHERE id = %s::uuid AND status = %s AND lease_owner = %s FOR SHARE) AS held")
