"""Full `dev` cycles in this process: the services and the executor alone, no HTTP, no
broker, no other thread competing for the GIL.

Each cycle: ``run_start`` + the worker's claim and segment, then 4 × (``interrupts_answer``
+ the claim and segment), as ``/agui/dev/`` and a Celery worker do them, but the segment
runs right here, claimed with the worker's own ``lifecycle.run_claim``, instead of in a
worker after a broker hop (the tasks the services send go to a queue of this bench's own
that nobody reads, purged at the end). This is a bench of the floor, not the product: the
product runs graphs only in Celery workers. Events are published to
Redis as usual, and the database connection goes back to the pool after each step, as
the web process gives it back after each request and segment. Prints wall and CPU time
per cycle, what our own code and LangGraph cost without the transport, and the CPU time
the Postgres and Redis servers spent on them. ``--profile FILE`` writes a cProfile of
the measured cycles.

Usage: python bench/inprocess.py [--cycles 40] [--warmup 5] [--profile FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
# The tasks the services send after each commit: to a queue no worker reads.
os.environ["CELERY_QUEUE"] = f"agentsite-bench-inprocess-{os.getpid()}"

from bench._database import fresh_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402

from agentsite.celery import app as celery_app  # noqa: E402
from bench._services import load, server_cpu_seconds, servers_per_run  # noqa: E402
from execution import executor, lifecycle  # noqa: E402
from execution.lifecycle import interrupts_answer  # noqa: E402
from hitl.decide import Answer  # noqa: E402
from hitl.models import AgentInterrupt  # noqa: E402
from runs import services  # noqa: E402
from streams.db import release_db_connections  # noqa: E402

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--profile", default="")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="bench")

    def segment(run_id: str) -> None:
        # As the worker's task: claim the segment (its own transaction), then run it.
        claimed = lifecycle.run_claim(run_id=run_id, worker="bench")
        assert claimed is not None
        executor.execute(claimed)
        release_db_connections()

    def cycle() -> None:
        run = services.run_start(owner=user, agent="dev", input={"topic": "bench"},
                                 surface="agui")
        release_db_connections()  # back to the pool after each step, as the web process
        segment(str(run.id))
        for payload in ANSWERS:
            pending = (AgentInterrupt.objects.filter(run=run, status="pending")
                       .values_list("interrupt_id", flat=True).get())
            interrupts_answer(actor=user, run_id=run.id, surface="agui", answers=[
                Answer(interrupt_id=pending, status="resolved", payload=payload)])
            release_db_connections()
            segment(str(run.id))
        run.refresh_from_db()
        assert run.status == "completed", run.status

    try:
        for _ in range(args.warmup):
            cycle()
        before = load()
        profile = cProfile.Profile() if args.profile else None
        servers = server_cpu_seconds()
        wall, cpu = time.perf_counter(), time.process_time()
        if profile:
            profile.enable()
        for _ in range(args.cycles):
            cycle()
        if profile:
            profile.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        servers = servers_per_run(servers, args.cycles)
    finally:
        celery_app.control.purge()  # the tasks sent to this bench's own queue
    if profile:
        profile.dump_stats(args.profile)
    print(f"dev cycles in one process (services + executor, no HTTP, no broker); "
          f"{before} before, {load()} after")
    print(f"{args.cycles} cycles: wall {wall / args.cycles * 1000:.1f} ms, "
          f"CPU {cpu / args.cycles * 1000:.1f} ms per cycle"
          + (" (under cProfile)" if profile else "") + f"; per cycle, {servers}")


if __name__ == "__main__":
    main()
