"""Who may read which event channel: our streams' rule, and django-eventstream's channel manager.

Channels (written by streams/publish.py, named in streams/keys.py):
- ``run-<run id>``: the run's AG-UI events — its owner, or a reviewer (may decide any run).
- ``user-<user id>``: that user's interrupt-queue changes — that user only.
- ``reviewers``: every user's interrupt-queue changes — reviewers only.

The stream views (streams/sse.py) check ``may_read`` before streaming and again every
30 s while open (and at once when the user's account changes: streams/access.py),
giving the database connection back at once: an open stream must not
hold one. ``ChannelManager`` gives django-eventstream's own paths the same rules.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django_eventstream.channelmanager import ChannelManagerBase

from hitl.selectors import can_decide, is_reviewer
from runs.models import AgentRun
from streams.db import release_db_connections
from streams.keys import (
    REVIEWERS_CHANNEL,
    is_queue_channel,
    is_user_channel,
    run_of,
    user_channel,
)

# (user pk, channel) whose access the current request has just checked (``checked``).
_checked: ContextVar[tuple[Any, str] | None] = ContextVar("streams_checked", default=None)


def user_stream_channel(user: Any) -> str:
    """The queue channel a user's pages listen to: everything for reviewers, else their own."""
    return REVIEWERS_CHANNEL if is_reviewer(user) else user_channel(user.pk)


def may_read(user: Any, channel: str) -> bool:
    # Inactive: no access, also to their own runs (the proxy's link names a user by id).
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if channel == REVIEWERS_CHANNEL:
        return is_reviewer(user)
    if is_user_channel(channel):
        return channel == user_channel(user.pk)
    if (named := run_of(channel)) is not None:
        try:
            run_id = uuid.UUID(named)
        except ValueError:
            return False
        # hitl.selectors.visible_runs' rule (owner or reviewer), owner first: one query
        # for an owner, whose streams are most of them, instead of the permission lookup.
        run = AgentRun.objects.filter(pk=run_id).only("owner_id").first()
        return run is not None and can_decide(user, run)
    return False


@contextmanager
def checked(user: Any, channel: str) -> Iterator[None]:
    """Within: ``user``'s access to ``channel`` was checked by this request a moment ago,
    so django-eventstream's own check (``ChannelManager``, on the same request) is not
    made again (a stream open through the proxy: each query counts at 10,000 opens)."""
    token = _checked.set((getattr(user, "pk", None), channel))
    try:
        yield
    finally:
        _checked.reset(token)


class ChannelManager(ChannelManagerBase):
    """The same rules for django-eventstream's own paths (its views, GRIP): channels
    come from our views (view kwargs), never from the query string."""

    def get_channels_for_request(self, request: Any, view_kwargs: dict) -> set[str]:
        return set(view_kwargs.get("channels", ()))

    def can_read_channel(self, user: Any, channel: str) -> bool:
        if user is not None and user.is_authenticated and _checked.get() == (user.pk, channel):
            return True
        try:
            return may_read(user, channel)
        finally:
            release_db_connections()

    def is_channel_reliable(self, channel: str) -> bool:
        # Every channel is stored (streams.storage.EventStore), so Last-Event-ID can
        # catch up on any.
        return is_queue_channel(channel) or run_of(channel) is not None
