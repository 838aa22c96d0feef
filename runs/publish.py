"""Publishing AG-UI events on a run's channel (django-eventstream over Redis pub/sub).

Events are stored in Redis with per-channel ids (so a reconnect with
Last-Event-ID gets what it missed) and fanned out to every web process.
"""

from __future__ import annotations

from collections.abc import Iterable

from ag_ui.core import BaseEvent
from django.db import transaction
from django_eventstream import send_event

from runs.agui import to_wire


def run_channel(run_id: object) -> str:
    return f"run-{run_id}"


def user_channel(user_id: object) -> str:
    return f"user-{user_id}"


def publish(run_id: object, events: Iterable[BaseEvent]) -> None:
    """Publish now. Only for events that follow no uncommitted write."""
    channel = run_channel(run_id)
    for event in events:
        send_event(channel, "message", to_wire(event))


def publish_on_commit(run_id: object, events: Iterable[BaseEvent]) -> None:
    """Publish once the surrounding transaction commits (nothing if it rolls back)."""
    events = list(events)
    transaction.on_commit(lambda: publish(run_id, events))


def notify_user_on_commit(user_id: object, payload: dict) -> None:
    """Tell a user's pages and queue views that their interrupt queue changed."""
    transaction.on_commit(lambda: send_event(user_channel(user_id), "message", payload))
