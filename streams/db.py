"""Giving database connections back while a stream stays open."""

from __future__ import annotations

from django.db import connections


def release_db_connections() -> None:
    """Give this thread's database connections back to the pool.

    A stream's request lives as long as the stream, and Django returns its connection
    only when the request finishes; without this, every open stream (SSE or AG-UI)
    would keep one pooled connection and the pool (DB_POOL_MAX) would run dry.
    """
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close()
