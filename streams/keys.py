"""Every Redis name the event transport uses, in one place: our own layout.

Each channel has a counter (the last id given out) and one key per stored event, whose
value is ``{"type": "message", "data": <event JSON>}``; every stored event is also
published on ``PUBSUB_CHANNEL`` as ``{channel, event_type, data, pub_id}``. Written by
``streams.publish`` (and ``streams.storage.EventStore``), read by the streams
(``streams.follow``), the AG-UI relay, page rendering and recovery.
"""

from __future__ import annotations

# Where every stored event is also fanned out, for every web process.
PUBSUB_CHANNEL = "agentsite:events"
# Queue changes of every user, for reviewers (permission hitl.decide_interrupt), who may
# decide anyone's interrupts: one channel instead of one subscription per user.
REVIEWERS_CHANNEL = "reviewers"
EVENT_KEY_PREFIX = "agentsite:event:"
# How long a stored event is kept (and an ended run's counter with it).
EVENT_TTL_SECONDS = 24 * 60 * 60


def run_channel(run_id: object) -> str:
    """A run's AG-UI events."""
    return f"run-{run_id}"


def user_channel(user_id: object) -> str:
    """One user's interrupt-queue changes."""
    return f"user-{user_id}"


def platform_hold_channel(run_id: object) -> str:
    """The proxy channel poked for every stored event of a run, so the LangGraph API's
    held streams of it ask for their frames (``lgapi.hold``; published by ``streams.edge``)."""
    return f"lg-{run_id}"


def run_of(channel: str) -> str | None:
    """The run id a run channel names (as written: not checked to be a UUID), else None."""
    return channel.removeprefix("run-") if channel.startswith("run-") else None


def is_user_channel(channel: str) -> bool:
    """One user's queue channel (``user_channel``)."""
    return channel.startswith("user-")


def is_queue_channel(channel: str) -> bool:
    """A queue channel (``/api/events/``), not a run's."""
    return channel == REVIEWERS_CHANNEL or is_user_channel(channel)


# The GRIP channel every held queue stream is also on (without GRIP_PREFIX): the edge
# forwarder sends a ``stream-reset`` on it after its fan-out connection dropped, since
# queue changes published meanwhile are lost (``streams.edge``).
QUEUE_RESET_CHANNEL = "queue-reset"


def counter_key(channel: str) -> str:
    """The last event id given out on ``channel``."""
    return f"agentsite:event-counter:{channel}"


def fence_key(channel: str) -> str:
    """Who may still publish on a run's channel: the lease of the segment that holds it,
    or ``closed`` once the run was cancelled (``streams.storage.SEND_LUA``)."""
    return f"agentsite:event-fence:{channel}"


def event_key(channel: str, event_id: int) -> str:
    """Stored event ``event_id`` of ``channel``."""
    return f"{EVENT_KEY_PREFIX}{channel}:{event_id}"
