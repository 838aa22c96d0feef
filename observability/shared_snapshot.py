"""One heavy query of a report on a second database connection, beside the others, and
reading the same data: the first transaction exports its snapshot
(``pg_export_snapshot``) and the second imports it (``SET TRANSACTION SNAPSHOT``), so both
see the database as of one instant, as one transaction would.

Used by the Insights page: its time-to-decision query (the waits of every decided
question, sorted three ways) costs as much as all its other queries together."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import connection, transaction

T = TypeVar("T")
# Postgres's snapshot ids: hex digits and dashes ("00000003-0000001B-1"). SET takes no
# bound parameter, so the id is checked before it is written into the statement.
SNAPSHOT_ID = re.compile(r"[0-9A-F]+(-[0-9A-F]+)+")
# A thread keeps its Django connection between uses; each use gives it back to the pool.
_beside = ThreadPoolExecutor(max_workers=2, thread_name_prefix="report-snapshot")


@contextmanager
def report_transaction(*, settings: str = "") -> Iterator[Callable[..., Future[Any]]]:
    """A read transaction (REPEATABLE READ) whose ``beside(fn, *args)`` runs ``fn`` in
    another connection on the same snapshot and returns its future (wait for it inside
    the block). ``settings``: ``SET LOCAL`` statements for both. Inside a transaction
    already (a test's), another connection would not see its rows: ``beside`` then runs
    ``fn`` here, at once."""
    nested = connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        if nested:
            if settings:
                cursor.execute(settings)

            def here(fn: Callable[..., T], *args: Any) -> Future[T]:
                done: Future[T] = Future()
                done.set_result(fn(*args))
                return done
            yield here
            return
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        if settings:
            cursor.execute(settings)
        cursor.execute("SELECT pg_export_snapshot()")
        (snapshot,) = cursor.fetchone()

        def beside(fn: Callable[..., T], *args: Any) -> Future[T]:
            return _beside.submit(_in_snapshot, snapshot, settings, fn, *args)
        yield beside


def _in_snapshot(snapshot: str, settings: str, fn: Callable[..., T], *args: Any) -> T:
    if not SNAPSHOT_ID.fullmatch(snapshot):
        raise ValueError(f"not a snapshot id: {snapshot!r}")
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")  # checked above
            if settings:
                cursor.execute(settings)
            return fn(*args)
    finally:
        connection.close()  # back to the pool
