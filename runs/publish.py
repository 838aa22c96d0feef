"""Publishing AG-UI events on a run's channel (django-eventstream over Redis pub/sub).

Events are stored in Redis with per-channel ids (so a reconnect with
Last-Event-ID gets what it missed) and fanned out to every web process.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable

import redis
from ag_ui.core import BaseEvent
from django.conf import settings
from django.db import transaction
from django_eventstream import send_event
from django_eventstream.storage import EVENT_TIMEOUT

from runs.agui import to_wire

_local = threading.local()


def run_channel(run_id: object) -> str:
    return f"run-{run_id}"


def user_channel(user_id: object) -> str:
    return f"user-{user_id}"


# Queue changes of every user, for reviewers (permission hitl.decide_interrupt), who may
# decide anyone's interrupts: one channel instead of one subscription per user.
REVIEWERS_CHANNEL = "reviewers"


def _redis() -> redis.Redis:
    client = getattr(_local, "redis", None)
    if client is None:
        client = _local.redis = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION)
    return client


def publish(run_id: object, events: Iterable[BaseEvent]) -> None:
    """Publish now. Only for events that follow no uncommitted write.

    Same keys and messages as django-eventstream's ``send_event`` with RedisStorage
    (its SSE views read them unchanged), but one connection per thread and two
    round trips per batch instead of a new connection and three per event.
    """
    payloads = [json.dumps(to_wire(event)) for event in events]
    if not payloads:
        return
    channel = run_channel(run_id)
    client = _redis()
    last = client.incrby(f"event_counter:{channel}", len(payloads))
    with client.pipeline(transaction=False) as pipe:
        for offset, data in enumerate(payloads):
            event_id = last - len(payloads) + 1 + offset
            pipe.setex(f"event:{channel}:{event_id}", EVENT_TIMEOUT * 60,
                       json.dumps({"type": "message", "data": data}))
            pipe.publish("events_channel", json.dumps(
                {"channel": channel, "event_type": "message", "data": data,
                 "pub_id": str(event_id)}))
        pipe.execute()


def publish_on_commit(run_id: object, events: Iterable[BaseEvent]) -> None:
    """Publish once the surrounding transaction commits (nothing if it rolls back)."""
    events = list(events)
    transaction.on_commit(lambda: publish(run_id, events))


def notify_user_on_commit(user_id: object, payload: dict) -> None:
    """Tell a user's pages and queue views, and the reviewers, that their queue changed."""
    def send() -> None:
        send_event(user_channel(user_id), "message", payload)
        send_event(REVIEWERS_CHANNEL, "message", {**payload, "owner_id": user_id})

    transaction.on_commit(send)
