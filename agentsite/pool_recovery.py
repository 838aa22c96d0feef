"""After a Postgres restart, drop every dead connection of this process's web pool at once.

Django's pool (``OPTIONS["pool"]``) checks a connection when it is borrowed and, between
failed checks, psycopg_pool backs off 1 s, 2 s, 4 s …: with several connections a restart
killed still idle in the pool, one request waits out ``DB_POOL_TIMEOUT`` (a 503), and
connections nobody borrowed stay dead, so a request minutes later can wait again. Django
accepts no other ``check`` through its public options. So when a request ends in 503
because Postgres did not answer, psycopg_pool's own ``ConnectionPool.check()`` (documented:
tests every idle connection, replaces the broken ones) runs once in the background on the
pool Django made (``connection.pool``, the backend's public property), and the requests
after it find only live connections.
"""

from __future__ import annotations

import logging
import threading

from django.db import DatabaseError, connection

log = logging.getLogger(__name__)
_running = threading.Lock()


def check_pool_soon() -> None:
    """Test the pool's idle connections in a background thread (one at a time)."""
    if not _running.acquire(blocking=False):
        return  # a check is already under way
    pool = getattr(connection, "pool", None)  # None without pooling
    if pool is None:
        _running.release()
        return

    def check() -> None:
        try:
            pool.check()
        except (DatabaseError, OSError, RuntimeError) as exc:  # still down: next 503 retries
            log.info("pool check after an outage: %s", exc)
        finally:
            _running.release()

    threading.Thread(target=check, name="pool-check", daemon=True).start()
