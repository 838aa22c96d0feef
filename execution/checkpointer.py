"""The LangGraph checkpointer: a pooled PostgresSaver on Django's own database."""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from django.db import connection
from langgraph.checkpoint.postgres import PostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from agentsite.pool_checks import RecentlyReturned

_lock = threading.Lock()
_pool: ConnectionPool | None = None
_saver: PostgresSaver | None = None


def conninfo() -> str:
    """libpq conninfo for the database Django is using right now (tests switch its name)."""
    params = connection.get_connection_params()
    keys = {"dbname": params.get("dbname"), "user": params.get("user"),
            "password": params.get("password"), "host": params.get("host"),
            "port": params.get("port")}
    return " ".join(f"{k}='{v}'" for k, v in keys.items() if v not in (None, ""))


def get_checkpointer() -> PostgresSaver:
    global _pool, _saver
    if _saver is None:
        with _lock:
            if _saver is None:
                recent = RecentlyReturned()
                _pool = ConnectionPool(
                    conninfo(),
                    min_size=1,
                    max_size=settings.AGENTSITE_CHECKPOINT_POOL_MAX,
                    kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
                            # Checkpoint writes commit without waiting for the WAL flush
                            # (~4 ms each here, several per segment). Still durable where
                            # it counts: the segment's pause / finish commits after them,
                            # synchronously, and flushing WAL up to its commit flushes
                            # every checkpoint write before it. Only a Postgres crash
                            # mid-segment can lose the segment's latest checkpoints: the
                            # segment then goes on from the last one kept, as after a
                            # lost worker.
                            "options": "-c synchronous_commit=off"},
                    open=True,
                    name="checkpointer",
                    # Test a connection when it is borrowed (unless it was given back a
                    # moment ago): after a Postgres restart a dead one is replaced instead
                    # of failing a graph step.
                    check=recent.skip_or(ConnectionPool.check_connection),
                    reset=recent.stamp,
                )
                _saver = PostgresSaver(_pool)
    return _saver


def close_checkpointer() -> None:
    global _pool, _saver
    with _lock:
        if _pool is not None:
            _pool.close()
        _pool, _saver = None, None


def setup_checkpoint_tables() -> None:
    """Create / migrate the checkpoint tables (idempotent). Runs from a Django migration."""
    from psycopg import Connection

    with Connection.connect(conninfo(), autocommit=True, prepare_threshold=0,
                            row_factory=dict_row) as conn:
        PostgresSaver(conn).setup()


def thread_values(thread_id: str) -> dict[str, Any]:
    """The graph state of a thread's latest checkpoint, read without its graph.

    For web processes, which compile no graph: the checkpointer's public ``get_tuple``
    and the checkpoint's ``channel_values``, minus LangGraph's own channels (names
    starting with ``__``, and edge triggers such as ``branch:to:<node>`` or
    ``join:…``, the only names with a colon). That is ``graph.get_state(config).values``
    for an ended thread, and for a paused one unless the step that paused ran parallel
    branches of which some finished: their writes wait in the checkpoint's pending writes
    until the resume, and applying them takes the graph's reducers (get_state does so).
    """
    saved = get_checkpointer().get_tuple({"configurable": {"thread_id": thread_id}})
    if saved is None:
        return {}
    return {key: value for key, value in saved.checkpoint["channel_values"].items()
            if not key.startswith("__") and ":" not in key}
