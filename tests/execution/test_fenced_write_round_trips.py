"""A fenced checkpoint write costs one round trip more than an unfenced one (issue 37).

The checkpointer's own saver on a pool of its own whose connections trace what they send
(libpq's trace, psycopg's public ``PGconn.trace``): each ``Sync`` or simple ``Query``
message is a round trip waited for. The check and the write go in one pipeline
(``execution/fencing.py``): its sync, then the pipeline's closing one; a ``BEGIN``, the
check, the write and a ``COMMIT``, each waited for, took four.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg import pq
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from execution.checkpointer import conninfo
from execution.fencing import FencedCheckpointer, SegmentLost, segment_config
from runs.models import AgentRun, Conversation

pytestmark = pytest.mark.django_db(transaction=True)

WRITES = 20


def _round_trips(trace: Path) -> int:
    sent = [line.split("\t") for line in trace.read_text().splitlines()]
    return sum(1 for fields in sent if len(fields) > 2 and fields[0] == "F"
               and fields[2] in ("Sync", "Query"))


def test_a_fenced_write_is_one_round_trip_more_at_most(tmp_path) -> None:
    owner = get_user_model().objects.create_user("trips")
    conversation = Conversation.objects.create(owner=owner, agent="dev")
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent="dev",
                                  agent_version="1", thread_id=str(conversation.id),
                                  status="running", lease_owner="worker/lease-1")
    trace = tmp_path / "libpq.trace"
    with trace.open("w") as out:
        def traced(conn) -> None:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

        with ConnectionPool(conninfo(), min_size=1, max_size=1, configure=traced,
                            kwargs={"autocommit": True, "prepare_threshold": 0,
                                    "row_factory": dict_row}) as pool:
            plain = PostgresSaver(pool)
            plain.setup()
            fenced = FencedCheckpointer(plain)

            def writes(saver, lease: str) -> int:
                before = _round_trips(trace) if trace.stat().st_size else 0
                config = {"configurable": {
                    "thread_id": str(uuid.uuid4()), "checkpoint_ns": "",
                    "checkpoint_id": str(uuid.uuid4()),
                    **segment_config(run_id=str(run.id), lease=lease)}}
                for n in range(WRITES):
                    saver.put_writes(config, [("channel", n)], str(uuid.uuid4()))
                out.flush()
                return _round_trips(trace) - before

            unfenced, held = writes(plain, "worker/lease-1"), writes(fenced, "worker/lease-1")
            with pytest.raises(SegmentLost):
                writes(fenced, "worker/lease-0")  # superseded: refused, as ever
            pool.close()
    print(f"\nround trips per write: unfenced {unfenced / WRITES}, fenced {held / WRITES}")
    assert held <= unfenced + WRITES, (unfenced, held)
