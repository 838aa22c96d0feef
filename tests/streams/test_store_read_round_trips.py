"""A stream's read of the store after an id is one Redis round trip (issue 37): the
counter and the next ids in one pipeline (``streams.follow.READ_AHEAD``), not the counter
and then the events. Counted with a client of our own: every command sent alone and every
pipeline is one round trip."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import redis.asyncio as aioredis

from agui.events import run_started, step_started
from streams.follow import READ_AHEAD, ChannelEvents
from streams.keys import run_channel
from streams.publish import publish, redis_client


class CountingRedis(aioredis.Redis):
    """An asyncio Redis client that counts its round trips."""

    trips = 0

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        CountingRedis.trips += 1
        return await super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute

        async def counted(raise_on_error: bool = True) -> list:
            CountingRedis.trips += 1
            return await execute(raise_on_error)

        pipe.execute = counted
        return pipe


def test_a_store_read_is_one_round_trip(settings) -> None:
    run_id = uuid.uuid4()
    publish(run_id, [run_started(thread_id="t", run_id=str(run_id)),
                     *(step_started(f"s{i}") for i in range(READ_AHEAD + 3))])
    redis_client()  # waits until what this thread published is stored

    async def reads() -> list[tuple[int, int]]:
        client = CountingRedis(**settings.EVENTSTREAM_REDIS)
        events = ChannelEvents(run_channel(run_id))
        events.client = client  # the reader's client, counted
        out = []
        try:
            for after in (0, READ_AHEAD - 1, READ_AHEAD + 4):
                CountingRedis.trips = 0
                found = await events.store_after(after)
                out.append((len(found), CountingRedis.trips))
        finally:
            await client.aclose()
        return out

    with ThreadPoolExecutor(1) as pool:  # a loop of its own (browser tests keep one here)
        results = pool.submit(asyncio.run, reads()).result()
    total = READ_AHEAD + 4
    # Up to READ_AHEAD new events: one round trip (it was two: the counter, then the
    # events); past them a second read for the rest; nothing new: one.
    assert results == [(total, 2), (5, 1), (0, 1)], results
