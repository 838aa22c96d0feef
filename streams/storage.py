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

from streams.keys import (
    EVENT_KEY_PREFIX,
    EVENT_TTL_SECONDS,
    PUBSUB_CHANNEL,
    counter_key,
    event_key,
    fence_key,
)

# Numbers each channel's batch, stores each event and fans it out, all channels in one
# command (atomic, so ids and publish order agree). KEYS: per channel its counter and its
# fence; ARGV: ttl, key prefix, fan-out channel, then per channel its name, event type, n,
# ended (1/0), fence op, fence token and n payloads. Returns each channel's last id (-1:
# refused by the fence). An ended channel's counter expires with its events (it would
# otherwise stay forever, one key per run); INCRBY keeps that expiry, so events published
# after the end do not make it lasting again, and nor does a counter made only then.
# Each stored and fanned-out event also carries ``at``, its publish time (Redis's clock,
# seconds as text), for the publish → delivery latency (``streams.follow``); clients
# never see it.
#
# The fence keeps a superseded segment off its run's channel (a cancelled run's hung
# model call returned minutes later and streamed into the channel). It holds the lease
# of the segment that publishes on the channel, or ``closed``. Fence ops:
# - ``claim`` (a segment's first publish): the fence becomes its lease; refused once the
#   run was cancelled. The counter lasts again (a failed run may be retried).
# - ``check`` (a segment's other publishes): refused unless the fence is its lease (or
#   unset); and refused once the channel's AG-UI run has ended (its last stored event is
#   RUN_FINISHED / RUN_ERROR: the segment's own end, or a failure's) unless the batch
#   starts a new one: a late event would be outside any run, which AG-UI clients reject.
# - ``close`` (the cancel): ``closed``, for good. Its events are a standalone AG-UI run
#   (RUN_STARTED, RUN_FINISHED). If a segment's AG-UI run is open on the channel (read
#   back to its RUN_STARTED, at most OPEN_RUN_CAP events), that run is ended instead: what
#   it left open is closed (text messages, tool calls, steps, as the protocol wants) and
#   the RUN_STARTED dropped. ``open_run`` below is the script's copy of
#   ``agui.open_state.open_run`` (the same reading, cap and closing order), kept here
#   because the cancel must read and write in one atomic step; a parity test holds them
#   together (tests/streams/test_open_state_parity.py).
# - ``end`` (a failure): as ``close``, but the fence becomes ``ended``, not ``closed``:
#   the failed segment (a run failed by another process while it streamed) publishes no
#   more, and a retry's claim owns the channel again.
# - none: the services' other publishes on commit, made under the run's lock.
# How far back (events) a run's open AG-UI run is looked for, here and in agui.open_state.
OPEN_RUN_CAP = 20_000
SEND_LUA = """
local ttl, prefix, fanout, a = tonumber(ARGV[1]), ARGV[2], ARGV[3], 4
-- The publish time (the server's clock, seconds as text), for the delivery latency.
local clock = redis.call('TIME')
local at = clock[1] .. '.' .. string.format('%06d', tonumber(clock[2]))
local lasts = {}
local function drop(list, value)
  for i = #list, 1, -1 do
    if list[i] == value then table.remove(list, i) return end
  end
end
local function type_of(data)
  -- Our publisher writes the type first (streams.publish.wire); others are decoded.
  local kind = string.match(data, '^{"type":"([A-Z_]+)"')
  if kind then return kind end
  local ok, event = pcall(cjson.decode, data)
  if ok and type(event) == 'table' then return event.type end
  return nil
end
local function run_ended(counter, channel)
  local id = tonumber(redis.call('GET', counter) or '0')
  if id <= 0 then return false end
  local raw = redis.call('GET', prefix .. channel .. ':' .. id)
  -- A plain search first: most last events are no end, and are not decoded.
  if not raw or not (string.find(raw, 'RUN_FINISHED', 1, true)
                     or string.find(raw, 'RUN_ERROR', 1, true)) then return false end
  local ok, stored = pcall(cjson.decode, raw)
  if not ok or type(stored) ~= 'table' or type(stored.data) ~= 'string' then return false end
  local kind = type_of(stored.data)
  return kind == 'RUN_FINISHED' or kind == 'RUN_ERROR'
end
local function open_run(counter, channel)
  local seen = {}
  local id = tonumber(redis.call('GET', counter) or '0')
  while id > 0 and #seen < OPEN_RUN_CAP do
    local raw = redis.call('GET', prefix .. channel .. ':' .. id)
    if not raw then return nil end
    local ok, event = pcall(cjson.decode, cjson.decode(raw).data)
    if not ok or type(event) ~= 'table' then return nil end
    if event.type == 'RUN_FINISHED' or event.type == 'RUN_ERROR' then return nil end
    if event.type == 'RUN_STARTED' then
      local texts, tools, steps = {}, {}, {}
      for i = #seen, 1, -1 do
        local e = seen[i]
        if e.type == 'TEXT_MESSAGE_START' then table.insert(texts, e.messageId)
        elseif e.type == 'TEXT_MESSAGE_END' then drop(texts, e.messageId)
        elseif e.type == 'TOOL_CALL_START' then table.insert(tools, e.toolCallId)
        elseif e.type == 'TOOL_CALL_END' then drop(tools, e.toolCallId)
        elseif e.type == 'STEP_STARTED' then table.insert(steps, e.stepName)
        elseif e.type == 'STEP_FINISHED' then drop(steps, e.stepName) end
      end
      local closes = {}
      for _, m in ipairs(texts) do
        table.insert(closes, cjson.encode({type = 'TEXT_MESSAGE_END', messageId = m}))
      end
      for _, t in ipairs(tools) do
        table.insert(closes, cjson.encode({type = 'TOOL_CALL_END', toolCallId = t}))
      end
      for _, s in ipairs(steps) do
        table.insert(closes, cjson.encode({type = 'STEP_FINISHED', stepName = s}))
      end
      return closes
    end
    table.insert(seen, event)
    id = id - 1
  end
  return nil
end
for k = 1, #KEYS / 2 do
  local counter, fence = KEYS[2 * k - 1], KEYS[2 * k]
  local channel, kind = ARGV[a], ARGV[a + 1]
  local n, ended = tonumber(ARGV[a + 2]), ARGV[a + 3] == '1'
  local op, token = ARGV[a + 4], ARGV[a + 5]
  local datas = {}
  for i = 1, n do datas[i] = ARGV[a + 5 + i] end
  local allowed = true
  if op == 'claim' then
    allowed = redis.call('GET', fence) ~= 'closed'
    if allowed then
      redis.call('SET', fence, token, 'EX', ttl)
      redis.call('PERSIST', counter)
    end
  elseif op == 'check' then
    local holder = redis.call('GET', fence)
    allowed = holder == false or holder == token
    if allowed and n > 0 and type_of(datas[1]) ~= 'RUN_STARTED' then
      allowed = not run_ended(counter, channel)
    end
  elseif op == 'close' or op == 'end' then
    redis.call('SET', fence, op == 'close' and 'closed' or 'ended', 'EX', ttl)
    local closes = open_run(counter, channel)
    if closes then
      table.remove(datas, 1)
      for i = #closes, 1, -1 do table.insert(datas, 1, closes[i]) end
    end
  end
  local last = -1
  if allowed then
    last = 0
    if #datas > 0 then
      last = redis.call('INCRBY', counter, #datas)
      for i, data in ipairs(datas) do
        local id = last - #datas + i
        redis.call('SETEX', prefix .. channel .. ':' .. id, ttl,
                   cjson.encode({type = kind, data = data, at = at}))
        redis.call('PUBLISH', fanout, cjson.encode(
                   {channel = channel, event_type = kind, data = data, pub_id = tostring(id),
                    at = at}))
      end
    end
    if ended and redis.call('EXPIRE', counter, ttl) == 0 then
      redis.call('SET', counter, 0, 'EX', ttl)
    end
  end
  lasts[k] = last
  a = a + 6 + n
end
return lasts
""".replace("OPEN_RUN_CAP", str(OPEN_RUN_CAP))
# Fence ops (see SEND_LUA): (op, token) for one channel's publish.
Fence = tuple[str, str]


def send_args(batches: dict[str, list[str]], ended: Any = (),
              event_type: str = "message", fences: dict[str, Fence] | None = None) -> list[Any]:
    """The arguments of ``EVAL SEND_LUA`` storing ``batches`` (channel → JSON ``data``
    strings, in order); ``ended``: channels whose counter now expires with their events;
    ``fences``: channel → (op, token), see SEND_LUA."""
    keys, args = [], [EVENT_TTL_SECONDS, EVENT_KEY_PREFIX, PUBSUB_CHANNEL]
    for channel, payloads in batches.items():
        op, token = (fences or {}).get(channel, ("", ""))
        keys += [counter_key(channel), fence_key(channel)]
        args += [channel, event_type, len(payloads), int(channel in ended), op, token,
                 *payloads]
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
