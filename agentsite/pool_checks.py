"""A psycopg_pool ``check`` that skips a connection given back a moment ago.

The checkpointer's pool (``execution.checkpointer``) tests a connection when it is
borrowed, so one a Postgres restart killed is replaced instead of failing a graph step.
The test is a round trip, and a segment borrows several times. A connection given back
less than ``DB_CHECK_IDLE_SECONDS`` ago whose socket has nothing to read is handed out
without it: a server that ends a session (restart, ``pg_terminate_backend``) sends a
last message and closes the socket, which makes it readable, and then the round trip
runs (and fails). One that breaks in use is dropped by the pool when it comes back.
Only psycopg_pool's public callbacks (``check``, ``reset``) are used.
"""

from __future__ import annotations

import select
import time
import weakref
from collections.abc import Callable
from typing import Any

import psycopg
from django.conf import settings


class RecentlyReturned:
    """When each pooled connection was last given back (the pool's ``reset`` callback),
    so its ``check`` can skip one that was in use a moment ago and has a quiet socket."""

    def __init__(self) -> None:
        self.idle_seconds = settings.DB_CHECK_IDLE_SECONDS
        self.returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    def stamp(self, conn: Any) -> None:
        self.returned[conn] = time.monotonic()

    def skip_or(self, check: Callable[[Any], None]) -> Callable[[Any], None]:
        def maybe_check(conn: Any) -> None:
            back = self.returned.get(conn)
            if (back is not None and time.monotonic() - back < self.idle_seconds
                    and _quiet(conn)):
                return
            check(conn)

        return maybe_check


def _quiet(conn: Any) -> bool:
    """Nothing waits to be read on the connection's socket (an idle session gets nothing
    from the server unless it is being ended)."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    return not readable
