"""The stream bench's publisher, a process of its own (bench/streams.py starts it).

``publish()`` (the worker's publish function) of one timestamped CUSTOM event at a time,
round robin over the runs, at a steady rate: ``{"t": time.time()}``, which each client
compares with its own ``time.time()`` when the event arrives (one machine, one clock).
It also listens to the store's fan-out (``streams.keys.PUBSUB_CHANNEL``) in a thread and
prints, as one JSON line, how long ``publish()`` took and how long an event took to come
out of Redis: the first leg of publish -> client.

Usage (by the bench, with its environment): python bench/_stream_publisher.py
RATE SECONDS RUN_ID...
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import fresh_database  # noqa: E402

fresh_database()  # the bench's database (already made: only the environment is read)

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from ag_ui.core import CustomEvent  # noqa: E402
from django.conf import settings  # noqa: E402

from bench._services import percentile  # noqa: E402
from streams.keys import PUBSUB_CHANNEL  # noqa: E402
from streams.publish import publish  # noqa: E402


def listen(pubsub: redis.client.PubSub, out: list[float], stop: threading.Event) -> None:
    while not stop.is_set():
        message = pubsub.get_message(timeout=0.2)
        if not message or message.get("type") != "message":
            continue
        now = time.time()
        data = json.loads(message["data"]).get("data", "")
        at = data.find('"t":')
        if at >= 0:
            out.append(now - float(data[at + 4:data.find("}", at)].split(",")[0]))


def main() -> None:
    rate, seconds, runs = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    fanout: list[float] = []
    stop = threading.Event()
    pubsub = redis.Redis(**settings.EVENTSTREAM_REDIS).pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(PUBSUB_CHANNEL)
    listener = threading.Thread(target=listen, args=(pubsub, fanout, stop), daemon=True)
    listener.start()
    count = int(rate * seconds)
    calls = []
    began = time.monotonic()
    for i in range(count):  # steady: the i-th at began + i / rate
        wait = began + i / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        t0 = time.perf_counter()
        publish(runs[i % len(runs)], [CustomEvent(name="bench", value={"t": time.time()})])
        calls.append(time.perf_counter() - t0)
    took = time.monotonic() - began
    time.sleep(0.5)
    stop.set()
    listener.join()

    def ms(xs: list[float], p: int) -> float:
        return round(percentile(xs, p) * 1000, 2) if xs else float("nan")

    print(json.dumps({"published": count, "seconds": round(took, 2),
                      "publish_p50": ms(calls, 50), "publish_p99": ms(calls, 99),
                      "fanout": len(fanout), "fanout_p50": ms(fanout, 50),
                      "fanout_p99": ms(fanout, 99)}), flush=True)


if __name__ == "__main__":
    main()
