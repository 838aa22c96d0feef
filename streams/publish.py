"""Publishing events: AG-UI events on a run's channel, queue changes on user channels.

Events are stored in Redis with per-channel ids (so a reconnect with Last-Event-ID
gets what it missed) and fanned out to every web process (our layout, ``streams.keys``;
one script, ``streams.storage.SEND_LUA``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
from ag_ui.core import BaseEvent
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from agentsite import timing
from streams.keys import REVIEWERS_CHANNEL, run_channel, user_channel
from streams.storage import Fence, send_args

log = logging.getLogger(__name__)
_local = threading.local()

# Connections of threads that have ended, for the next new thread. Under ASGI each request
# to a sync view runs in a thread of its own (Django's per-request ThreadSensitiveContext),
# and a new Redis connection for each cost 1.3 ms of a REST answer (connect, handshake,
# first answer waited for), against 0.01 ms for a send on a connection in use.
_spare_senders: list[_Sender] = []
_spare_clients: list[redis.Redis] = []
_SPARE_MAX = 16  # beyond that, a burst's connections are closed


class _Held:
    """This thread's Redis connections. A thread's thread-local values are dropped when
    it ends, and this with them: its connections go to the spare lists then."""

    __slots__ = ("sender", "redis")

    def __init__(self) -> None:
        self.sender: _Sender | None = None
        self.redis: redis.Redis | None = None

    def __del__(self) -> None:
        try:
            for spare, held in ((_spare_senders, self.sender), (_spare_clients, self.redis)):
                if held is None:
                    continue
                if len(spare) < _SPARE_MAX:
                    spare.append(held)  # atomic under the GIL
                else:
                    held.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the module may be gone
            pass


def _held() -> _Held:
    held = getattr(_local, "held", None)
    if held is None:
        held = _local.held = _Held()
    return held


def close_connections() -> None:
    """Close this thread's connections and the spares: the next use makes new ones from
    the settings as they are then (tests that point the event store elsewhere)."""
    held = _local.__dict__.pop("held", None)
    for connection in (held.sender, held.redis) if held else ():
        if connection is not None:
            connection.close()
    if held is not None:
        held.sender = held.redis = None  # closed: not spares
    for spare in (_spare_senders, _spare_clients):
        while spare:
            spare.pop().close()


def _take(spare: list[Any]) -> Any:
    try:
        return spare.pop()
    except IndexError:
        return None


def wire(event: BaseEvent) -> str:
    """The event as the camelCase JSON text ag-ui-protocol's EventEncoder writes after
    ``data:`` (the same call), so a relay can send it on unchanged (``agui.relay``)."""
    return event.model_dump_json(by_alias=True)


def redis_client() -> redis.Redis:
    """This thread's client of the event store. It holds its one connection (reconnecting
    after an error): a pooled client checks a connection out per command, and polls its
    socket each time, a system call that gives up the GIL on the segment's hot path."""
    wait_published()  # what this thread published is stored before it reads (in order)
    held = _held()
    if held.redis is None:
        held.redis = _take(_spare_clients) or redis.Redis(
            **settings.EVENTSTREAM_STORAGE_CONNECTION, single_connection_client=True)
    return held.redis


def publish(run_id: object, events: Iterable[BaseEvent], fence: Fence | None = None) -> None:
    """Publish now. Only for events that follow no uncommitted write.

    ``fence``: a segment's (``claim`` / ``check``, its lease): refused by the store once
    another segment holds the run's channel or the run was cancelled (``SEND_LUA``).

    What ``EventStore.append_event`` stores, but one connection per thread and one
    command per batch, whose answer is read later (``_Sender``), instead of a round
    trip per event.
    """
    events = list(events)
    payloads = [wire(event) for event in events]
    if not payloads:
        return
    if timing.enabled:
        last = str(getattr(events[-1].type, "value", events[-1].type))
        timing.mark(run_id, f"publish_start:{last}")
    channel = run_channel(run_id)
    _send({channel: payloads}, fences={channel: fence} if fence else None)
    if timing.enabled:
        timing.mark(run_id, f"publish_end:{last}")


def _send(batches: dict[str, list[str]], ended: Collection[str] = (),
          fences: dict[str, Fence] | None = None) -> None:
    """Store and fan out JSON ``data`` strings per channel, in one command for all of
    them (``streams.storage.SEND_LUA``). ``ended``: channels whose counter now expires
    with their events (every one of them is a key of ``batches``)."""
    # EVAL with the script's text: Redis finds it in its cache by hash, and there is no
    # NOSCRIPT answer to come back late after a restart (_Sender reads answers late).
    _sender().send(*send_args(batches, ended, fences=fences))


# Answers read together, in one read from the socket, every this many sends.
_READ_EVERY = 64
# A send after this long without one waits for its answer: a connection that broke while
# quiet (Redis restarted) is found, and the send goes again on a new one.
_QUIET_SECONDS = 1.0


class _Sender:
    """This thread's publishing connection (apart from ``redis_client``'s).

    A send is written and not waited for. Redis runs a connection's commands in order,
    so the order of events holds, and the segment's thread neither waits for the store
    nor gives up the GIL to read an answer: one read takes many answers, later. A Redis
    error in an answer (events lost) is logged when it is read. A send on a broken
    connection goes once more on a new one (as redis-py's retry would), found when the
    send fails, when answers are read, or by waiting for the answer after a quiet while.
    """

    def __init__(self) -> None:
        # No redis-py retry: its default backs off ~4 s per refused connect, which a
        # worker's segment (or a web request publishing on commit) would wait out on
        # every publish while Redis is down. The send's own once-more covers a blip.
        self.client = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION,
                                  single_connection_client=True,
                                  retry=Retry(NoBackoff(), 0))
        self.unread = 0
        self.sent_at = 0.0

    def send(self, *args: Any) -> None:
        quiet = time.monotonic() - self.sent_at > _QUIET_SECONDS
        connection = self.client.connection
        for last_try in (False, True):
            try:
                connection.send_command(*args)
                self.unread += 1
                if quiet or self.unread >= _READ_EVERY:
                    self.read()
                break
            except (RedisConnectionError, RedisTimeoutError):
                self.drop()
                if last_try:
                    raise
        self.sent_at = time.monotonic()

    def read(self) -> None:
        """Read the answers of what was sent (by now they are there, but for the last)."""
        connection = self.client.connection
        while self.unread:
            try:
                connection.read_response()
            except ResponseError as exc:
                log.warning("events lost: the event store refused a publish: %s", exc)
            finally:
                self.unread -= 1

    def drop(self) -> None:
        """Close a broken connection; what was unread is gone with it."""
        self.client.connection.disconnect()
        self.unread = 0

    def close(self) -> None:
        self.client.close()


def wait_published() -> None:
    """Wait until the event store has run what this thread published (for a read on
    another connection that must see it). A broken connection is logged, not raised."""
    sender = _held().sender
    if sender is None or not sender.unread:
        return
    try:
        sender.read()
    except (RedisConnectionError, RedisTimeoutError) as exc:
        sender.drop()
        log.warning("events may be lost: the event store's connection broke: %s", exc)


def _sender() -> _Sender:
    held = _held()
    if held.sender is None:
        held.sender = _take(_spare_senders) or _Sender()
    return held.sender


@contextmanager
def published_together() -> Iterator[None]:
    """Inside one transaction's body: this thread's ``publish_on_commit`` (without a
    fence), ``run_ended_on_commit`` and ``notify_user_on_commit`` join one outbox, sent in
    one command on the commit, at the place of this call among the commit's callbacks (a
    segment's end: its closing events, the queue's notices and the counter's expiry, one
    command instead of two or three).

    Only where everything the block publishes commits or rolls back with the block's
    transaction: a savepoint rolled back inside it while the transaction goes on would
    not take its publishes back."""
    if transaction.get_autocommit():
        raise RuntimeError("published_together() belongs inside a transaction")
    if getattr(_local, "together", None) is not None:  # nested: the outer one sends
        yield
        return
    box = _local.together = _Outbox()
    box.send_on_commit()
    try:
        yield
    finally:
        _local.together = None


def _joined() -> tuple[_Outbox, bool]:
    """The outbox of the enclosing ``published_together``, or a new one (True: to send)."""
    box = getattr(_local, "together", None)
    return (box, False) if box is not None else (_Outbox(), True)


def publish_on_commit(run_id: object, events: Iterable[BaseEvent] = (),
                      fence: Fence | None = None) -> list[BaseEvent]:
    """Publish once the surrounding transaction commits (nothing if it rolls back).

    Returns the list that is published: events added to it before the commit go out too.
    On-commit callbacks run in the order they were registered, so a transaction that
    registers its events first has them published before its notices and tasks.

    ``robust``: a Redis failure is logged, never raised into the caller, whose change
    is committed. Events are recoverable (connect rebuilds a thread from the database);
    business state must not depend on them.

    ``fence``: ``("claim", lease)`` (a segment's claim: the channel is its own),
    ``("close", "")`` (the run was cancelled: ``events`` are a standalone AG-UI end, and
    no segment publishes on the channel after them) or ``("end", "")`` (a standalone end
    that ends an open AG-UI run instead), see ``SEND_LUA``."""
    batch = list(events)
    box, own = (_Outbox(), True) if fence else _joined()
    box.add(run_channel(run_id), batch, run_id=run_id)
    if fence:
        box.fences[run_channel(run_id)] = fence
    if own:
        box.send_on_commit()
    return batch


def run_ended_on_commit(run_id: object) -> None:
    """The run has ended: once the transaction commits, its channel's event counter
    expires with its events (24 h), as they do. A counter lives as long as its run can
    still publish (a paused run's ids must not start again), and no longer."""
    box, own = _joined()
    box.end(run_channel(run_id))
    if own:
        box.send_on_commit()


def notify_user_on_commit(user_id: object, payload: dict) -> None:
    """Tell a user's pages and queue views, and the reviewers, that their queue changed."""
    box, own = _joined()
    box.add(user_channel(user_id), [json.dumps(payload, cls=DjangoJSONEncoder)])
    box.add(REVIEWERS_CHANNEL, [json.dumps({**payload, "owner_id": user_id},
                                           cls=DjangoJSONEncoder)])
    if own:
        box.send_on_commit()


class _Outbox:
    """What one call publishes on commit, every channel in one command (``_send``).

    Each call registers its own ``on_commit`` callback (Django's public hook), so a
    rolled-back transaction or savepoint drops exactly its own calls' events, and the
    callbacks run in the order registered. A transaction with several calls sends one
    command each (unless they join one in ``published_together``); the sender does not
    wait for their answers (``_Sender``), so that is one socket write more per call, not
    one round trip more. Run events are serialized at send time: callers add to the list
    until the commit."""

    def __init__(self) -> None:
        self.items: list[tuple[str, list[Any]]] = []
        self.runs: dict[str, object] = {}  # run channel → run id (benchmark marks)
        self.ended: set[str] = set()  # channels whose counter expires (run_ended_on_commit)
        self.fences: dict[str, Fence] = {}

    def add(self, channel: str, items: list[Any], run_id: object = None) -> None:
        self.items.append((channel, items))
        if run_id is not None:
            self.runs[channel] = run_id

    def end(self, channel: str) -> None:
        self.ended.add(channel)

    def send_on_commit(self) -> None:
        # Outside a transaction Django runs it at once, with the same robust logging.
        transaction.on_commit(self.send, robust=True)

    def send(self) -> None:
        batches: dict[str, list[str]] = {}
        for channel, items in self.items:
            batches.setdefault(channel, []).extend(
                item if isinstance(item, str) else wire(item) for item in items)
        batches = {channel: payloads for channel, payloads in batches.items() if payloads}
        for channel in (*self.ended, *self.fences):  # these go even with no events
            batches.setdefault(channel, [])
        if not batches:
            return
        marks = [(run_id, json.loads(batches[channel][-1])["type"])
                 for channel, run_id in self.runs.items()
                 if batches.get(channel)] if timing.enabled else []
        for run_id, last in marks:
            timing.mark(run_id, f"publish_start:{last}")
        _send(batches, self.ended, self.fences)
        for run_id, last in marks:
            timing.mark(run_id, f"publish_end:{last}")
