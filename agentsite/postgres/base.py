"""Django's PostgreSQL backend, with a connection pool that gets over a Postgres restart
in one go and does not test a connection it just had back.

psycopg_pool checks a connection when it is taken (CONN_HEALTH_CHECKS) and, after a
failed check, waits 1 s, 2 s, 4 s … before checking the next one. A restart kills every
pooled connection, so with eight of them the first request waited out DB_POOL_TIMEOUT
and failed. Here the first failed check has the pool check all its idle connections at
once (``ConnectionPool.check()``: broken ones are dropped and replaced in the
background), and the request gets a fresh connection about a second later.

The check is a round trip to the server, and a busy process borrows connections
several times per request or segment. A connection given back less than
``DB_CHECK_IDLE_SECONDS`` ago whose socket has nothing to read is handed out without
it: a server that ends a session (restart, ``pg_terminate_backend``) sends a last
message and closes the socket, which makes it readable, and then the round trip
runs (and fails, and sweeps). One that breaks in use is dropped by the pool when it
comes back.
"""

from __future__ import annotations

import select
import time
import weakref
from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool

from agentsite import prepared


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> ConnectionPool | None:
        options = self.settings_dict["OPTIONS"].get("pool")
        if (options and self.alias not in self._connection_pools
                and self.settings_dict["CONN_HEALTH_CHECKS"] and self.alias != NO_DB_ALIAS):
            # As Django builds it (base.DatabaseWrapper.pool), with the sweeping check.
            holder: list[ConnectionPool] = []
            kwargs = {**self.get_connection_params(), "autocommit": True}
            recent = RecentlyReturned()
            pool = ConnectionPool(kwargs=kwargs, open=False,
                                  configure=self._configure_connection,
                                  check=recent.skip_or(sweeping_check(holder)),
                                  reset=recent.stamp,
                                  **({} if options is True else options))
            holder.append(self._connection_pools.setdefault(self.alias, pool))
        return super().pool

    def init_connection_state(self) -> None:
        super().init_connection_state()
        if self.connection is not None and self.alias != NO_DB_ALIAS:
            prepared.prepare_missing(self.connection)  # agentsite.prepared


def sweeping_check(holder: list[ConnectionPool]) -> Any:
    """A pool ``check`` callback: the connection's own check, and on failure a check of
    every idle connection of the pool (``holder[0]``)."""

    def check(conn: Any) -> None:
        try:
            ConnectionPool.check_connection(conn)
        except Exception:
            if holder:
                holder[0].check()
            raise

    return check


class RecentlyReturned:
    """When each pooled connection was last given back (the pool's ``reset`` callback),
    so its ``check`` can skip one that was in use a moment ago and has a quiet socket."""

    def __init__(self) -> None:
        self.idle_seconds = settings.DB_CHECK_IDLE_SECONDS
        self.returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    def stamp(self, conn: Any) -> None:
        self.returned[conn] = time.monotonic()

    def skip_or(self, check: Any) -> Any:
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
