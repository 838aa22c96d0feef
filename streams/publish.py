"""Publishing events: AG-UI events on a run's channel, queue changes on user channels.

Events are stored in Redis with per-channel ids (so a reconnect with Last-Event-ID
gets what it missed) and fanned out to every web process (django-eventstream's
formats; names in ``streams.keys``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable

import redis
from ag_ui.core import BaseEvent
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django_eventstream.storage import EVENT_TIMEOUT
from redis.exceptions import NoScriptError

from agentsite import timing
from streams.keys import (
    EVENT_KEY_PREFIX,
    PUBSUB_CHANNEL,
    REVIEWERS_CHANNEL,
    counter_key,
    run_channel,
    user_channel,
)

_local = threading.local()


def wire(event: BaseEvent) -> str:
    """The event as the camelCase JSON text ag-ui-protocol's EventEncoder writes after
    ``data:`` (the same call), so a relay can send it on unchanged (``agui.relay``)."""
    return event.model_dump_json(by_alias=True)


def redis_client() -> redis.Redis:
    """This thread's client of the event store. It holds its one connection (reconnecting
    after an error): a pooled client checks a connection out per command, and polls its
    socket each time, a system call that gives up the GIL on the segment's hot path."""
    client = getattr(_local, "redis", None)
    if client is None:
        client = _local.redis = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION,
                                            single_connection_client=True)
    return client


def publish(run_id: object, events: Iterable[BaseEvent]) -> None:
    """Publish now. Only for events that follow no uncommitted write.

    Same keys and messages as django-eventstream's ``send_event`` with RedisStorage
    (its SSE views read them unchanged), but one connection per thread and one
    round trip per batch instead of a new connection and three per event.
    """
    events = list(events)
    payloads = [wire(event) for event in events]
    if not payloads:
        return
    if timing.enabled:
        last = str(getattr(events[-1].type, "value", events[-1].type))
        timing.mark(run_id, f"publish_start:{last}")
    _send({run_channel(run_id): payloads})
    if timing.enabled:
        timing.mark(run_id, f"publish_end:{last}")


# Numbers each channel's batch, stores each event and fans it out, all channels in one
# round trip (atomic, so ids and publish order agree). KEYS: the channels' counters; ARGV:
# ttl, key prefix, fan-out channel, then per channel its name, n and n payloads. Same
# keys and JSON shapes as django-eventstream.
_SEND_LUA = """
local ttl, prefix, fanout, a = tonumber(ARGV[1]), ARGV[2], ARGV[3], 4
for k = 1, #KEYS do
  local channel, n = ARGV[a], tonumber(ARGV[a + 1])
  local last = redis.call('INCRBY', KEYS[k], n)
  for i = 1, n do
    local id = last - n + i
    local data = ARGV[a + 1 + i]
    redis.call('SETEX', prefix .. channel .. ':' .. id, ttl,
               cjson.encode({type = 'message', data = data}))
    redis.call('PUBLISH', fanout, cjson.encode(
               {channel = channel, event_type = 'message', data = data, pub_id = tostring(id)}))
  end
  a = a + 2 + n
end
return #KEYS
"""


def _send(batches: dict[str, list[str]]) -> None:
    """Store and fan out JSON ``data`` strings per channel, as django-eventstream's
    ``send_event`` does, in one round trip for all of them."""
    client = redis_client()
    keys, args = [], [EVENT_TIMEOUT * 60, EVENT_KEY_PREFIX, PUBSUB_CHANNEL]
    for channel, payloads in batches.items():
        keys.append(counter_key(channel))
        args += [channel, len(payloads), *payloads]
    # EVALSHA directly (redis-py's Script objects would add a SCRIPT EXISTS round trip).
    sha = getattr(_local, "send_sha", None) or _load_send_script(client)
    try:
        client.evalsha(sha, len(keys), *keys, *args)
    except NoScriptError:  # Redis restarted and lost its script cache: load again, once
        client.evalsha(_load_send_script(client), len(keys), *keys, *args)


def _load_send_script(client: redis.Redis) -> str:
    _local.send_sha = client.script_load(_SEND_LUA)
    return _local.send_sha


def publish_on_commit(run_id: object, events: Iterable[BaseEvent] = ()) -> list[BaseEvent]:
    """Publish once the surrounding transaction commits (nothing if it rolls back).

    Returns the list that is published: events added to it before the commit go out too.
    On-commit callbacks run in the order they were registered, so a transaction that
    registers its events first has them published before its notices and tasks.

    ``robust``: a Redis failure is logged, never raised into the caller, whose change
    is committed. Events are recoverable (connect rebuilds a thread from the database);
    business state must not depend on them."""
    batch = list(events)
    transaction.on_commit(lambda: publish(run_id, batch), robust=True)
    return batch


def notify_user_on_commit(user_id: object, payload: dict) -> None:
    """Tell a user's pages and queue views, and the reviewers, that their queue changed."""
    def send() -> None:
        # What send_event() would store and publish, for both channels in one round trip.
        _send({user_channel(user_id): [json.dumps(payload, cls=DjangoJSONEncoder)],
               REVIEWERS_CHANNEL: [json.dumps({**payload, "owner_id": user_id},
                                              cls=DjangoJSONEncoder)]})

    transaction.on_commit(send, robust=True)  # a Redis failure is logged, as above
