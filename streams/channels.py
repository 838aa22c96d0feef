"""Who may read which event channel: django-eventstream's channel manager for agentsite.

Channels (written by runs/publish.py):
- ``run-<run id>``: the run's AG-UI events — its owner, or a reviewer (may decide any run).
- ``user-<user id>``: that user's interrupt-queue changes — that user only.
- ``reviewers``: every user's interrupt-queue changes — reviewers only.

The stream views check access before streaming; django-eventstream checks again each
time a stream reads stored events (first read, catch-up after a burst). Every check
gives its database connection back at once: an open stream must not hold one.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from django.db import connections
from django_eventstream.channelmanager import ChannelManagerBase

from hitl.services import decidable_runs
from runs.publish import REVIEWERS_CHANNEL, user_channel

DECIDE_PERMISSION = "hitl.decide_interrupt"


def release_db_connections() -> None:
    """Give this thread's database connections back to the pool.

    A stream's request thread lives as long as the stream, and Django returns its
    connection only when the request finishes; without this, every open stream would
    keep one pooled connection and the pool (DB_POOL_MAX) would run dry.
    """
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close()


def user_stream_channel(user: Any) -> str:
    """The queue channel a user's pages listen to: everything for reviewers, else their own."""
    return REVIEWERS_CHANNEL if user.has_perm(DECIDE_PERMISSION) else user_channel(user.pk)


def may_read(user: Any, channel: str) -> bool:
    if user is None or not user.is_authenticated:
        return False
    if channel == REVIEWERS_CHANNEL:
        return user.has_perm(DECIDE_PERMISSION)
    if channel.startswith("user-"):
        return channel == user_channel(user.pk)
    if channel.startswith("run-"):
        try:
            run_id = uuid.UUID(channel.removeprefix("run-"))
        except ValueError:
            return False
        # Same rule as deciding: own runs, or any run with the decide permission.
        return decidable_runs(user).filter(pk=run_id).exists()
    return False


class ChannelManager(ChannelManagerBase):
    """Channels come from our views (view kwargs), never from the query string."""

    # How long one stream reuses an access decision: django-eventstream asks again at
    # every read from the store (bursts cause many), and each ask costs a pooled
    # connection; a revoked access still ends a stream within this time (at its next read).
    RECHECK_AFTER = 30.0

    def get_channels_for_request(self, request: Any, view_kwargs: dict) -> set[str]:
        return set(view_kwargs.get("channels", ()))

    def can_read_channel(self, user: Any, channel: str) -> bool:
        if user is None:
            return False
        # The user object lives as long as its request (= the stream): cache on it.
        decided = user.__dict__.setdefault("_stream_access", {})
        ok, until = decided.get(channel, (False, 0.0))
        if time.monotonic() < until:
            return ok
        try:
            ok = may_read(user, channel)
        finally:
            release_db_connections()
        decided[channel] = (ok, time.monotonic() + self.RECHECK_AFTER)
        return ok

    def is_channel_reliable(self, channel: str) -> bool:
        # Every channel is stored (RedisStorage), so Last-Event-ID can catch up on any.
        return channel == REVIEWERS_CHANNEL or channel.startswith(("run-", "user-"))
