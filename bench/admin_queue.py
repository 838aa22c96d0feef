"""The admin approval queue under load: changelist server time and query count.

Seeds (once; ``--reseed`` to start over) a bench database ``agentsite_bench_admin`` on the
configured Postgres with 50 users, 10,000 paused runs and 100,000 pending interrupts
(10 per run, every kind, one in five with a deadline, some of those past), using
bulk_create. Then requests the AgentInterrupt changelist in-process with Django's test
client, as a reviewer (sees everyone's) and as a staff user without the permission (sees
their own runs'), unfiltered and with each filter, and prints p50 / p99 of the server
time and the number of SQL queries per request.

Usage: python bench/admin_queue.py [--samples 40] [--reseed]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from bench._database import fresh_database, use_database  # noqa: E402

fresh_database()

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from bench._services import load, percentile  # noqa: E402

BENCH_DB = "agentsite_bench_admin"
USERS, RUNS, PER_RUN = 50, 10_000, 10
KINDS = ["approval", "review", "input", "select", "multiSelect", "modal", "unlock"]


def request_for(kind: str, i: int) -> dict:
    base = {"type": kind, "message": f"Question {i}: may the agent go ahead with step {i % 97}?"}
    options = [{"label": "One", "value": "one"}, {"label": "Two", "value": "two"}]
    extra = {
        "approval": {"details": {"amount": i % 1000}},
        "review": {"proposal": {"title": f"Plan {i}"}, "allowed": ["approve", "reject"]},
        "input": {"placeholder": "your answer"},
        "select": {"options": options},
        "multiSelect": {"options": options},
        "modal": {"title": "Notice", "body": "Read this", "actions": options},
        "unlock": {"key": f"k{i}"},
    }[kind]
    return {**base, **extra}


def seed() -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from hitl.models import AgentInterrupt
    from runs import registry
    from runs.models import AgentRun, Conversation

    User = get_user_model()
    started = time.perf_counter()
    AgentInterrupt.objects.all().delete()
    AgentRun.objects.all().delete()
    Conversation.objects.all().delete()
    User.objects.filter(username__startswith="bench-").delete()
    users = User.objects.bulk_create([
        User(username=f"bench-user-{i:02d}", is_staff=True, password="!") for i in range(USERS)])
    reviewer = User.objects.create_user("bench-reviewer", password="!", is_staff=True)
    reviewer.user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    agents = [a.name for a in registry.all_agents()] or ["dev"]
    conversations = Conversation.objects.bulk_create([
        Conversation(owner=users[i % USERS], agent=agents[i % len(agents)], title=f"c{i}")
        for i in range(RUNS)], batch_size=2000)
    runs = AgentRun.objects.bulk_create([
        AgentRun(owner=c.owner, conversation=c, agent=c.agent, agent_version="1",
                 thread_id=str(c.id), status=AgentRun.Status.PAUSED, segments=1)
        for c in conversations], batch_size=2000)
    rows = []
    for r, run in enumerate(runs):
        for k in range(PER_RUN):
            i = r * PER_RUN + k
            kind = KINDS[i % len(KINDS)]
            rows.append(AgentInterrupt(run=run, interrupt_id=f"bench{i:08x}", kind=kind,
                                       request=request_for(kind, i)))
    AgentInterrupt.objects.bulk_create(rows, batch_size=5000)
    with connection.cursor() as cursor:
        # auto_now_add set every created_at to now: spread them over 30 days, and give one
        # row in five a deadline (a quarter of those already past).
        cursor.execute("""
            UPDATE hitl_agentinterrupt SET
              created_at = now() - (random() * interval '30 days'),
              expires_at = CASE WHEN random() < 0.2
                                THEN now() + (random() * interval '8 days' - interval '2 days')
                           END""")
        cursor.execute("ANALYZE")
    print(f"seeded {len(rows)} interrupts over {len(runs)} runs and {USERS} users "
          f"in {time.perf_counter() - started:.0f} s")


def measure(clients: list[tuple[str, Client]], cases: list[tuple[str, str]],
            samples: int) -> dict[tuple[str, str], tuple[list[float], set[int], int]]:
    """Round-robin over every (user, case), so a busy moment of the machine is shared."""
    out: dict[tuple[str, str], tuple[list[float], set[int], int]] = {}
    for label, client in clients:
        for name, url in cases:
            for _ in range(2):  # warm caches and the connection
                client.get(url)
            out[(label, name)] = ([], set(), 0)
    for _ in range(samples):
        for label, client in clients:
            for name, url in cases:
                with CaptureQueriesContext(connection) as captured:
                    started = time.perf_counter()
                    response = client.get(url)
                    elapsed = time.perf_counter() - started
                assert response.status_code == 200, (url, response.status_code)
                times, queries, _ = out[(label, name)]
                times.append(elapsed)
                queries.add(len(captured))
                out[(label, name)] = (times, queries,
                                      response.content.count(b'class="action-select"'))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--reseed", action="store_true")
    args = parser.parse_args()

    from django.contrib.auth import get_user_model

    from hitl.models import AgentInterrupt

    use_database(BENCH_DB)
    if args.reseed or AgentInterrupt.objects.filter(interrupt_id__startswith="bench").count() \
            != RUNS * PER_RUN:
        seed()
    User = get_user_model()
    base = "/admin/hitl/agentinterrupt/"
    some_user = "bench-user-07"
    cases = [
        ("unfiltered (pending)", base),
        ("status=all", base + "?status=all"),
        ("status=decided", base + "?status=decided"),
        ("kind=approval", base + "?kind=approval"),
        ("agent=dev", base + "?agent=dev"),
        ("overdue=yes", base + "?overdue=yes"),
        ("overdue=no", base + "?overdue=no"),
        ("kind+agent+overdue", base + "?kind=review&agent=tasklist&overdue=no"),
        ("search requester", base + f"?q={some_user}"),
        ("search question text", base + "?q=step+42%3F"),
        ("page 20", base + "?p=20"),
        ("admin index", "/admin/"),
    ]
    print(f"{AgentInterrupt.objects.filter(status='pending').count()} pending interrupts; "
          f"{args.samples} requests each, in-process (Django test client), interleaved")
    print(f"before: {load()}")
    clients = []
    for who, label in (("bench-reviewer", "reviewer"), (some_user, "own runs")):
        client = Client()
        client.force_login(User.objects.get(username=who))
        clients.append((label, client))
    results = measure(clients, cases, args.samples)
    print(f"{'who':<9} {'changelist':<22} {'p50 ms':>8} {'p99 ms':>8} {'queries':>8} {'rows':>5}")
    for (label, name), (times, queries, rows) in results.items():
        print(f"{label:<9} {name:<22} {percentile(times, 50) * 1000:8.1f} "
              f"{percentile(times, 99) * 1000:8.1f} {max(queries):8d} {rows:5d}")
    print(f"after: {load()}")


if __name__ == "__main__":
    main()
