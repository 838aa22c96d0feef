"""Django's PostgreSQL backend, with a connection pool that gets over a Postgres restart
in one go.

psycopg_pool checks a connection when it is taken (CONN_HEALTH_CHECKS) and, after a
failed check, waits 1 s, 2 s, 4 s … before checking the next one. A restart kills every
pooled connection, so with eight of them the first request waited out DB_POOL_TIMEOUT
and failed. Here the first failed check has the pool check all its idle connections at
once (``ConnectionPool.check()``: broken ones are dropped and replaced in the
background), and the request gets a fresh connection about a second later.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> ConnectionPool | None:
        options = self.settings_dict["OPTIONS"].get("pool")
        if (options and self.alias not in self._connection_pools
                and self.settings_dict["CONN_HEALTH_CHECKS"] and self.alias != NO_DB_ALIAS):
            # As Django builds it (base.DatabaseWrapper.pool), with the sweeping check.
            holder: list[ConnectionPool] = []
            kwargs = {**self.get_connection_params(), "autocommit": True}
            pool = ConnectionPool(kwargs=kwargs, open=False,
                                  configure=self._configure_connection,
                                  check=sweeping_check(holder),
                                  **({} if options is True else options))
            holder.append(self._connection_pools.setdefault(self.alias, pool))
        return super().pool


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
