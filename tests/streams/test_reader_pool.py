"""Many open streams reading the store at once (a burst of opens) wait for one of the
reader's connections instead of failing: redis-py's default pool raised past 100 in use,
and each failed read cut a stream that had already answered 200."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import redis

from streams.pubsub import READ_CONNECTIONS, Reader


def test_reads_past_the_pool_size_wait_for_a_connection(settings) -> None:
    key = "agentsite-test-reader-pool"
    redis.Redis(**settings.EVENTSTREAM_REDIS).set(key, "x")

    async def burst() -> list:
        reader = Reader()
        try:
            # Each BLPOP holds its connection for 0.2 s: all of them in use at once.
            reads = [reader.client.blpop([f"{key}-empty"], timeout=0.2)
                     for _ in range(READ_CONNECTIONS * 3)]
            return await asyncio.gather(*reads, reader.client.get(key))
        finally:
            await reader.client.aclose()

    # A loop of its own on a thread of its own (the suite's browser tests keep one
    # running on this thread).
    with ThreadPoolExecutor(1) as pool:
        results = pool.submit(asyncio.run, burst()).result()
    assert results[:-1] == [None] * (READ_CONNECTIONS * 3) and results[-1] == b"x"
