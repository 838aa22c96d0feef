"""The event store: our Redis layout (``streams.keys``), one script for every write.

``EventStore`` is also django-eventstream's storage (``EVENTSTREAM_STORAGE_CLASS``,
its documented ``StorageBase`` interface), so the library's own paths (``send_event``,
its views, GRIP) read and write the same events as our streams do.
"""

from __future__ import annotations

import json
from typing import Any

import redis
from django.conf import settings
from django_eventstream.event import Event
from django_eventstream.storage import StorageBase

from streams.keys import EVENT_KEY_PREFIX, EVENT_TTL_SECONDS, PUBSUB_CHANNEL, counter_key, event_key

# Numbers each channel's batch, stores each event and fans it out, all channels in one
# command (atomic, so ids and publish order agree). KEYS: the channels' counters; ARGV:
# ttl, key prefix, fan-out channel, then per channel its name, event type, n, ended (1/0)
# and n payloads. Returns each channel's last id. An ended channel's counter expires with
# its events (it would otherwise stay forever, one key per run); INCRBY keeps that expiry,
# so events published after the end (a live segment closing its AG-UI run) do not make
# it lasting again, and nor does a counter made only then.
SEND_LUA = """
local ttl, prefix, fanout, a = tonumber(ARGV[1]), ARGV[2], ARGV[3], 4
local lasts = {}
for k = 1, #KEYS do
  local channel, kind = ARGV[a], ARGV[a + 1]
  local n, ended = tonumber(ARGV[a + 2]), ARGV[a + 3] == '1'
  local last = 0
  if n > 0 then
    last = redis.call('INCRBY', KEYS[k], n)
    for i = 1, n do
      local id = last - n + i
      local data = ARGV[a + 3 + i]
      redis.call('SETEX', prefix .. channel .. ':' .. id, ttl,
                 cjson.encode({type = kind, data = data}))
      redis.call('PUBLISH', fanout, cjson.encode(
                 {channel = channel, event_type = kind, data = data, pub_id = tostring(id)}))
    end
  end
  if ended and redis.call('EXPIRE', KEYS[k], ttl) == 0 then
    redis.call('SET', KEYS[k], 0, 'EX', ttl)
  end
  lasts[k] = last
  a = a + 4 + n
end
return lasts
"""


def send_args(batches: dict[str, list[str]], ended: Any = (),
              event_type: str = "message") -> list[Any]:
    """The arguments of ``EVAL SEND_LUA`` storing ``batches`` (channel → JSON ``data``
    strings, in order); ``ended``: channels whose counter now expires with their events."""
    keys, args = [], [EVENT_TTL_SECONDS, EVENT_KEY_PREFIX, PUBSUB_CHANNEL]
    for channel, payloads in batches.items():
        keys.append(counter_key(channel))
        args += [channel, event_type, len(payloads), int(channel in ended), *payloads]
    return ["EVAL", SEND_LUA, len(keys), *keys, *args]


class EventStore(StorageBase):
    """Stored events with per-channel ids, for django-eventstream's interface."""

    def __init__(self) -> None:
        self.redis = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION)

    def append_event(self, channel: str, event_type: str, data: Any) -> Event:
        """Store and fan out one event (``data``: its JSON text, as ``send_event`` gives)."""
        if not isinstance(data, str):
            data = json.dumps(data)
        (event_id,) = self.redis.execute_command(
            *send_args({channel: [data]}, event_type=event_type))
        return Event(channel, event_type, data, id=int(event_id))

    def get_events(self, channel: str, last_id: int, limit: int = 100) -> list[Event]:
        """Events after ``last_id`` (at most ``limit``), in one round trip for the range;
        expired ones are skipped."""
        ids = range(last_id + 1, min(last_id + limit, self.get_current_id(channel)) + 1)
        if not ids:
            return []
        events = []
        for event_id, raw in zip(ids, self.redis.mget([event_key(channel, i) for i in ids]),
                                 strict=True):
            if raw:
                stored = json.loads(raw)
                events.append(Event(channel, stored["type"], stored["data"], id=event_id))
        return events

    def get_current_id(self, channel: str) -> int:
        return int(self.redis.get(counter_key(channel)) or 0)
