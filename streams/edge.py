"""The edge forwarder: every stored event, published to the GRIP proxy (Pushpin).

``python -m streams.edge`` (started by ``make run`` with ``EDGE=pushpin``, one per proxy
in docker-compose.yml). It subscribes to the event store's fan-out
(``streams.keys.PUBSUB_CHANNEL``: ``{channel, event_type, data, pub_id}`` for every event
the one store script wrote, and ``{access: [user ids]}`` for an account change, which
closes those users' held streams: ``streams.access``) and publishes each event on the
proxy's channel ``events-<channel>`` as django-eventstream's GRIP path does (``build-id`` content,
``id`` = the event's id, ``prev-id`` = the one before), batched: whatever arrived while
the last publish was under way goes in the next one. Workers and web processes are
unchanged: they write the store as before.

With ``GRIP_ZMQ_PUSH_URI`` (Pushpin's ``push_in_spec``) the items go over a ZeroMQ PUSH
socket instead, one message each (``J`` + the item as JSON, which Pushpin reads as it
reads its HTTP publish's items): no HTTP request, no connection per publish (Pushpin
1.36 closes every publish connection) and no wait for an answer. A proxy that is down
finds them queued (up to ``ZMQ_QUEUE`` items) when it is back; beyond that they are
dropped and logged.

Nothing here must be perfect. The proxy checks each channel's ids: an event missing
(lost while this process or its Redis connection was down, or dropped after the proxy
refused it) makes it ask the web process for what followed its last id (the store has
it; ``streams.grip``), and it asks every ``STREAM_RECHECK_SECONDS`` anyway. A queue
change is not recovered by id: once its fan-out is back after a drop, the forwarder sends
every held queue stream a ``stream-reset`` (the pages re-read the queue). Two forwarders
on one proxy publish every event twice: the proxy drops an id it has seen.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import time
from typing import Any
from urllib.parse import quote

import django
import httpx
import zmq

log = logging.getLogger("streams.edge")

BATCH_MAX = 500  # items per publish request
RETRY_FOR = 3.0  # seconds a batch is retried while the proxy does not answer
RECONNECT_WAIT = 0.5
STATS_EVERY = 10.0  # seconds between the summary lines in the log (when it published)
ZMQ_QUEUE = 10_000  # items held for a proxy that does not take them (ZeroMQ's SNDHWM)


def item(body: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """One fan-out message as a GRIP publish item (the library's format, ``publish_event``)."""
    from django_eventstream.utils import sse_encode_event
    from gripcontrol import HttpStreamFormat
    from pubcontrol import Item

    event_id = str(body["pub_id"])
    content = sse_encode_event(body["event_type"], body["data"], event_id="%I", escape=True)
    out = Item(HttpStreamFormat(content, content_filters=["build-id"]), id=event_id,
               prev_id=str(int(event_id) - 1)).export()
    out["channel"] = f"{prefix}events-{quote(body['channel'])}"
    return out


def poke_item(body: dict[str, Any], prefix: str = "") -> dict[str, Any] | None:
    """For an event of a run, an empty item on the run's Platform channel
    (``streams.keys.platform_hold_channel``) whose ``prev-id`` never follows a hold's
    (``w<id>``): the proxy follows those holds' next links, which answer the Platform's
    frames from the store (``lgapi.hold``). None for other channels."""
    from gripcontrol import HttpStreamFormat
    from pubcontrol import Item

    from streams.keys import platform_hold_channel, run_of

    run_id = run_of(body["channel"])
    if run_id is None:
        return None
    event_id = str(body["pub_id"])
    out = Item(HttpStreamFormat(""), id=event_id, prev_id=str(int(event_id) - 1)).export()
    out["channel"] = f"{prefix}{platform_hold_channel(run_id)}"
    return out


def close_items(body: dict[str, Any], prefix: str = "") -> list[dict[str, Any]]:
    """An access change (``streams.access``: ``{"access": [user ids]}``) as publish items
    that close those users' held streams; they reconnect, and the reconnect is checked."""
    from gripcontrol import HttpStreamFormat
    from pubcontrol import Item

    from streams.access import access_channel

    out = []
    for user_id in body["access"]:
        close = Item(HttpStreamFormat(close=True)).export()
        close["channel"] = f"{prefix}{access_channel(user_id)}"
        out.append(close)
    return out


def queue_reset_item(prefix: str = "") -> dict[str, Any]:
    """A ``stream-reset`` for every held queue stream (``streams.keys.QUEUE_RESET_CHANNEL``):
    what was published while the fan-out was away never reached the proxy, and a queue
    change is not stored for it to recover (a run's events are, by id). The pages re-read
    the queue (static/agentsite/events.js: ``onGap``)."""
    from gripcontrol import HttpStreamFormat
    from pubcontrol import Item

    from streams.keys import QUEUE_RESET_CHANNEL

    content = 'event: stream-reset\ndata: {"channels": []}\n\n'
    out = Item(HttpStreamFormat(content)).export()
    out["channel"] = f"{prefix}{QUEUE_RESET_CHANNEL}"
    return out


class HttpPublisher:
    """Items posted to the proxy's publish endpoint (GRIP_URL), the answer awaited."""

    done = "proxy answered"  # what the summary's times end with

    def __init__(self, control_uri: str) -> None:
        self.url = control_uri.rstrip("/") + "/publish/"
        self.where = f"to {self.url} (HTTP)"
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self.client = httpx.AsyncClient(timeout=5.0, limits=limits)

    async def send(self, items: list[dict[str, Any]]) -> int:
        """Publish ``items``; return how many the proxy took."""
        deadline = time.monotonic() + RETRY_FOR
        while True:
            try:
                response = await self.client.post(self.url, json={"items": items})
                if response.status_code < 300:
                    return len(items)
                log.warning("proxy refused %d events: %s %s", len(items),
                            response.status_code, response.text[:200])
                return 0  # a bad item would be refused again; the proxy recovers the ids
            except httpx.HTTPError as exc:
                if time.monotonic() > deadline:
                    log.warning("proxy unreachable, %d events left to its recovery: %s",
                                len(items), exc)
                    return 0
                await asyncio.sleep(0.1)

    async def close(self) -> None:
        await self.client.aclose()


class ZmqPublisher:
    """Items pushed to Pushpin's ZeroMQ input (GRIP_ZMQ_PUSH_URI), one message each."""

    done = "queued"

    def __init__(self, push_uri: str) -> None:
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.PUSH)
        self.socket.setsockopt(zmq.LINGER, 0)  # a stopping forwarder drops what it held
        self.socket.setsockopt(zmq.SNDHWM, ZMQ_QUEUE)
        self.socket.connect(push_uri)
        self.where = f"to {push_uri} (ZeroMQ)"

    async def send(self, items: list[dict[str, Any]]) -> int:
        # Never waits: ZeroMQ's I/O thread writes; a full queue (the proxy away for a
        # while) drops the rest, which the proxy recovers by id.
        for sent, one in enumerate(items):
            try:
                self.socket.send(b"J" + json.dumps(one).encode(), zmq.NOBLOCK)
            except zmq.Again:
                log.warning("proxy not taking events, %d left to its recovery",
                            len(items) - sent)
                return sent
        return len(items)

    async def close(self) -> None:
        self.socket.close()
        self.context.term()


class Forwarder:
    def __init__(self, control_uri: str, redis_kwargs: dict[str, Any], prefix: str = "",
                 push_uri: str = "") -> None:
        self.publisher = ZmqPublisher(push_uri) if push_uri else HttpPublisher(control_uri)
        self.redis_kwargs, self.prefix = redis_kwargs, prefix
        self.published = 0
        # Per publish since the last summary: (items, seconds from the batch's first
        # message read to its publish done, seconds of the publish alone).
        self.samples: list[tuple[int, float, float]] = []
        self.reported = time.monotonic()
        self.published_at: list[Any] = []  # the publish times of the batch's events

    def summary(self, quiet: bool = False) -> None:
        """Log what the publishes since the last summary took, every STATS_EVERY seconds
        and once the fan-out is ``quiet`` (for the bench and for an operator: a slow
        proxy shows here before the browsers notice)."""
        now = time.monotonic()
        if not self.samples or (now - self.reported < STATS_EVERY and not quiet):
            return
        samples, self.samples, self.reported = self.samples, [], now
        held = sorted(s[1] for s in samples)
        posts = sorted(s[2] for s in samples)
        log.info("published %d events in %d publishes; read -> %s p50 %.1f ms, "
                 "max %.1f ms; publish p50 %.1f ms, max %.1f ms", sum(s[0] for s in samples),
                 len(samples), self.publisher.done, held[len(held) // 2] * 1000, held[-1] * 1000,
                 posts[len(posts) // 2] * 1000, posts[-1] * 1000)

    async def run(self) -> None:
        """Forward the fan-out channel to the proxy until cancelled, subscribing again
        whenever Redis goes away."""
        try:
            while True:
                await self.session()
        finally:
            await self.publisher.close()

    async def session(self) -> None:
        """One subscription: read batches and publish them until Redis goes away."""
        import redis.asyncio as aioredis

        from streams.keys import PUBSUB_CHANNEL

        redis = aioredis.Redis(**self.redis_kwargs, client_name=f"agentsite-edge-{os.getpid()}")
        pubsub = redis.pubsub()
        try:
            await pubsub.subscribe(PUBSUB_CHANNEL)
            print(f"edge forwarder: subscribed; publishing {self.publisher.where}", flush=True)
            while True:
                await self.forward(pubsub)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - Redis went away: subscribe again
            log.warning("event fan-out lost; subscribing again", exc_info=True)
            await asyncio.sleep(RECONNECT_WAIT)
        finally:
            try:
                await pubsub.aclose()
                await redis.aclose()
            except Exception:  # noqa: BLE001 - already gone
                pass

    async def forward(self, pubsub: Any) -> None:
        """Publish what is waiting (up to BATCH_MAX messages, after waiting up to 5 s for
        the first) as one batch of proxy items."""
        message = await pubsub.get_message(timeout=5.0)
        if message is None:
            self.summary(quiet=True)
            return
        read_at = time.monotonic()
        batch = [message]
        while len(batch) < BATCH_MAX:  # what is waiting already
            more = await pubsub.get_message(timeout=0)
            if more is None:
                break
            batch.append(more)
        items = [one for m in batch for one in self.items_of(m)]
        if items:
            began = time.monotonic()
            self.published += await self.publisher.send(items)
            done = time.monotonic()
            self.samples.append((len(items), done - read_at, done - began))
            handed_over(self.published_at)
        self.published_at.clear()
        self.summary()

    def items_of(self, message: dict[str, Any]) -> list[Any]:
        """The proxy items one pub/sub message becomes."""
        if message.get("type") == "subscribe":
            # (Re)subscribed, at a start too, and also when redis-py reconnected by
            # itself: queue changes may have been lost.
            return [queue_reset_item(self.prefix)]
        if message.get("type") != "message":
            return []
        body = json.loads(message["data"])
        if "access" in body:
            return close_items(body, self.prefix)
        self.published_at.append(body.get("at"))
        poke = poke_item(body, self.prefix)
        return [item(body, self.prefix)] + ([poke] if poke is not None else [])


def handed_over(published_at: list[Any]) -> None:
    """The publish → delivery latency of events just handed to the proxy: the proxy
    writes them to its held streams itself, unseen by us, so this hand-over is where
    they are timed (``agentsite_event_delivery_seconds{surface="grip"}``)."""
    from observability import metrics

    for at in published_at:
        if at is not None:
            metrics.event_delivered(surface="grip", path="live", published_at=at)


def freeze_startup() -> None:
    """Load what a publish uses, then have full collections skip all of it (why:
    agentsite/startup_gc.py). Unfrozen, Django's ~130,000 objects made a full collection
    70-130 ms, one in the first ~10 s of publishing, inside a publish: every event read
    meanwhile waited (docs/scaling.md, "Latency.")."""
    import django_eventstream.utils  # noqa: F401
    import gripcontrol  # noqa: F401
    import pubcontrol  # noqa: F401
    import redis.asyncio  # noqa: F401

    import streams.access  # noqa: F401
    import streams.keys  # noqa: F401
    from agentsite.startup_gc import freeze_startup_objects

    freeze_startup_objects()


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
    django.setup()
    from django.conf import settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s edge: %(message)s",
                        stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per publish
    if not settings.GRIP_PROXIES:
        print("edge forwarder: GRIP_URL is not set", file=sys.stderr)
        return 2
    forwarders = [Forwarder(proxy["control_uri"], settings.EVENTSTREAM_REDIS,
                            getattr(settings, "GRIP_PREFIX", ""), settings.GRIP_ZMQ_PUSH_URI)
                  for proxy in settings.GRIP_PROXIES]
    freeze_startup()

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)
        await asyncio.gather(*(f.run() for f in forwarders))

    try:
        asyncio.run(serve())
    except asyncio.CancelledError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
