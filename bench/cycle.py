"""Full HITL cycle latency: through the product vs. the same graph run directly.

Product: POST /api/runs/ → the Celery worker runs the graph to the first interrupt →
answer over REST →
… (4 interrupts of the ``dev`` agent) → completed. Completion of each segment is
observed on the run's AG-UI event channel (Redis pub/sub), not by polling.
Direct: the same compiled graph with LangGraph + PostgresSaver in this process,
invoke + 4 × Command(resume=...), on the same database.
The two alternate cycle by cycle, so both see the same machine load. Prints the load
before and after and a per-phase breakdown of the product's resumed segments.

Usage: python bench/cycle.py [--cycles N] [--warmup N]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
import redis  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from langgraph.types import Command  # noqa: E402

from agents import dev  # noqa: E402
from agentsite import timing  # noqa: E402
from agentsite.token_auth import token_issue  # noqa: E402
from bench import _timing  # noqa: E402
from bench._services import Stack, load, report, stock_checkpointer  # noqa: E402
from streams.keys import PUBSUB_CHANNEL  # noqa: E402

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


class Finishes:
    """Waits for RUN_FINISHED / RUN_ERROR on a run's channel via Redis pub/sub."""

    def __init__(self) -> None:
        self.pubsub = redis.Redis(**settings.EVENTSTREAM_REDIS).pubsub()
        self.pubsub.subscribe(PUBSUB_CHANNEL)
        self.seen: dict[str, list[dict]] = {}

    def wait(self, run_id: str, count: int, timeout: float = 30) -> dict:
        channel = f"run-{run_id}"
        deadline = time.monotonic() + timeout
        while len(self.seen.get(channel, [])) < count:
            msg = self.pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))
            if msg is None and time.monotonic() > deadline:
                raise TimeoutError(f"{channel}: no RUN_FINISHED #{count}")
            if not msg or msg["type"] != "message":
                continue
            body = json.loads(msg["data"])
            data = json.loads(body["data"])
            if data["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                self.seen.setdefault(body["channel"], []).append(data)
        return self.seen[channel][count - 1]


def product_cycle(client: httpx.Client, finishes: Finishes) -> float:
    t0 = time.perf_counter()
    r = client.post("/api/runs/", json={"agent": "dev", "input": {"topic": "bench"}})
    assert r.status_code == 201, r.text
    run = r.json()
    for i, payload in enumerate(ANSWERS, start=1):
        finished = finishes.wait(run["id"], i)
        _timing.mark(run["id"], "client_done")
        interrupt_id = finished["outcome"]["interrupts"][0]["id"]
        _timing.mark(run["id"], "client_send")
        r = client.post(f"/api/runs/{run['id']}/resume/",
                        json={"interrupt_id": interrupt_id, "payload": payload})
        assert r.status_code == 202, r.text
    final = finishes.wait(run["id"], len(ANSWERS) + 1)
    elapsed = time.perf_counter() - t0
    _timing.mark(run["id"], "client_done")
    assert final["outcome"]["type"] == "success", final
    return elapsed


def direct_cycle(graph) -> float:
    t0 = time.perf_counter()
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke(dev.initial_state(dev.DevInput(topic="bench"), ""), config)
    for payload in ANSWERS:
        graph.invoke(Command(resume=payload), config)
    elapsed = time.perf_counter() - t0
    assert graph.get_state(config).values["outcome"] == "completed"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")
    token = token_issue(user=user, name="bench", scopes="admin")[1]
    graph = dev.build().compile(checkpointer=stock_checkpointer())

    queue = f"agentsite-bench-{os.getpid()}"
    with Stack(queue) as stack, httpx.Client(
            base_url=stack.base_url, headers={"Authorization": f"Token {token}"},
            timeout=30) as client:
        finishes = Finishes()
        for _ in range(args.warmup):
            direct_cycle(graph)
            product_cycle(client, finishes)
        timing.configure(str(stack.timing_log))
        time.sleep(2 * timing.FLUSH_SECONDS)  # the warm-up's marks are out first
        stack.timing_log.write_text("")  # only the measured cycles
        before = load()
        direct: list[float] = []
        product: list[float] = []
        for _ in range(args.cycles):  # interleaved: both see the same machine load
            direct.append(direct_cycle(graph))
            product.append(product_cycle(client, finishes))
        after = load()
        timing.configure("")

    print(f"dev agent: start + 4 interrupts/decisions + completed; database "
          f"{settings.DATABASES['default']['NAME']} on {settings.DATABASES['default']['HOST']}")
    print(f"interleaved; {before} before, {after} after")
    d50, d99 = report("direct LangGraph+Postgres", direct)
    p50, p99 = report("agentsite (REST+worker)", product)
    print(f"{'ratio product/direct':<28}        p50={p50 / d50:8.2f} x    p99={p99 / d99:8.2f} x")
    print("target: ratio <= 3 x (p50 and p99)")
    _timing.print_breakdown(stack.timing_log, "REST resume → RUN_FINISHED seen on Redis "
                            "pub/sub")


if __name__ == "__main__":
    main()
