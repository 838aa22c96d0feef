"""Every Redis name the event transport uses, in one place.

The formats are django-eventstream's (``RedisStorage`` and its pub/sub fan-out), so
the library's SSE machinery reads what ``streams.publish`` writes unchanged.
"""

from __future__ import annotations

# Where every stored event is also fanned out, for every web process.
PUBSUB_CHANNEL = "events_channel"
# Queue changes of every user, for reviewers (permission hitl.decide_interrupt), who may
# decide anyone's interrupts: one channel instead of one subscription per user.
REVIEWERS_CHANNEL = "reviewers"
EVENT_KEY_PREFIX = "event:"


def run_channel(run_id: object) -> str:
    """A run's AG-UI events."""
    return f"run-{run_id}"


def user_channel(user_id: object) -> str:
    """One user's interrupt-queue changes."""
    return f"user-{user_id}"


def counter_key(channel: str) -> str:
    """The last event id given out on ``channel``."""
    return f"event_counter:{channel}"


def event_key(channel: str, event_id: int) -> str:
    """Stored event ``event_id`` of ``channel``."""
    return f"{EVENT_KEY_PREFIX}{channel}:{event_id}"
