"""What fencing a segment's checkpoint writes costs (execution/fencing.py).

A 4-step graph streams on the Postgres checkpointer, with its writes fenced by a
running run's lease (``FencedCheckpointer``) and without (the bare ``PostgresSaver``),
alternating, on a fresh bench database. Prints per-stream wall time (p50 / p90) and the
checkpoint writes per stream, so the cost per write can be read off, and this process's
CPU time per stream (mean).

Usage: python bench/fencing.py [--rounds 200] [--durability sync]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from bench._services import load  # noqa: E402
from execution.checkpointer import get_checkpointer  # noqa: E402
from execution.fencing import FencedCheckpointer, segment_config  # noqa: E402
from runs.models import AgentRun, Conversation  # noqa: E402


class State(TypedDict):
    n: int


def graph(checkpointer):
    g = StateGraph(State)
    for name in ("a", "b", "c", "d"):
        g.add_node(name, lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", "c")
    g.add_edge("c", "d")
    g.add_edge("d", END)
    return g.compile(checkpointer=checkpointer)


class Counting(FencedCheckpointer):
    """Counts writes (for the table), fenced like the product's."""

    writes = 0

    def put(self, *args, **kwargs):
        Counting.writes += 1
        return super().put(*args, **kwargs)

    def put_writes(self, *args, **kwargs):
        Counting.writes += 1
        return super().put_writes(*args, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--durability", default="sync", choices=("sync", "async", "exit"))
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    owner = get_user_model().objects.create_user("bench-fencing")
    conversation = Conversation.objects.create(owner=owner, agent="bench")
    lease = "bench/lease"
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent="bench",
                                  agent_version="1", thread_id=str(conversation.id),
                                  status="running", lease_owner=lease)
    saver = get_checkpointer()
    plain, fenced = graph(saver), graph(Counting(saver))
    times: dict[str, list[float]] = {"plain": [], "fenced": []}
    cpu: dict[str, list[float]] = {"plain": [], "fenced": []}  # this process, all threads
    print(f"load before: {load()}")
    for i in range(args.rounds + 10):
        for name, compiled in (("plain", plain), ("fenced", fenced)) if i % 2 else (
                ("fenced", fenced), ("plain", plain)):
            config = {"configurable": {"thread_id": str(uuid.uuid4()),
                                       **segment_config(run_id=str(run.id), lease=lease)}}
            started, cpu_started = time.perf_counter(), time.process_time()
            for _ in compiled.stream({"n": 0}, config, durability=args.durability):
                pass
            if i >= 10:  # warm-up
                times[name].append((time.perf_counter() - started) * 1000)
                cpu[name].append((time.process_time() - cpu_started) * 1000)
    writes = Counting.writes / (args.rounds + 10)
    print(f"load after: {load()}")
    print(f"durability={args.durability}, {args.rounds} alternating rounds, "
          f"{writes:.0f} checkpoint writes per stream")
    for name, values in times.items():
        values.sort()
        print(f"{name:7s} p50 {statistics.median(values):6.2f} ms   "
              f"p90 {values[int(len(values) * 0.9)]:6.2f} ms   "
              f"CPU mean {statistics.mean(cpu[name]):6.2f} ms")
    delta = statistics.median(times["fenced"]) - statistics.median(times["plain"])
    cpu_delta = statistics.mean(cpu["fenced"]) - statistics.mean(cpu["plain"])
    print(f"fencing: +{delta:.2f} ms per stream, +{delta / writes:.3f} ms per write; CPU "
          f"+{cpu_delta:.2f} ms per stream, +{cpu_delta / writes * 1000:.0f} µs per write")


if __name__ == "__main__":
    main()
