"""The admin's Insights page under load: server time and query count.

Seeds (once; ``--reseed`` to start over) a bench database ``agentsite_bench_insights`` on
the configured Postgres with 20 reviewers, 20,000 runs over 5 agents and 100,000
interrupts (5 per run, spread over 30 days: 85 % decided after up to 8 hours, by one of
the reviewers, the rest pending, expired or escalated; batched tool requests, per-call
tool approvals, reviews and approvals with their decisions) and a usage row per run on
one of four models. Then requests the page in-process with Django's test client, as a
reviewer, over the default 30 days unfiltered and with each filter, and prints p50 / p99
of the server time and the number of SQL queries per request. Budget: p50 <= 300 ms.

Usage: python bench/insights.py [--samples 30] [--reseed]
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

BENCH_DB = "agentsite_bench_insights"
REVIEWERS, RUNS, PER_RUN = 20, 20_000, 5
AGENTS = ["dev", "tasklist", "support", "billing", "ops"]
MODELS = ["gpt-4o-mini", "claude-sonnet-4", "llama3", ""]
BATCH = {"action_requests": [{"name": "send_email", "args": {"to": "a@example.com"}},
                             {"name": "delete_file", "args": {"path": "/tmp/x"}}],
         "review_configs": []}
DECISIONS = ["approve", "edit", "reject", "respond"]


def question(i: int) -> tuple[str, dict, dict]:
    """(kind, request, decision) of interrupt ``i``."""
    pick = DECISIONS[i % 4]
    match i % 4:
        case 0:
            return "hitl_request", BATCH, {"decisions": [{"type": pick},
                                                         {"type": DECISIONS[(i // 4) % 2 * 2]}]}
        case 1:
            return ("tool_approval", {"type": "tool_approval", "name": "send_email",
                                      "args": {}}, {"type": pick})
        case 2:
            return ("review", {"type": "review", "message": f"Plan {i}", "proposal": {}},
                    {"decision": pick})
        case _:
            return "approval", {"type": "approval", "message": f"Go {i}?"}, {"approved": True}


def seed() -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission

    from hitl.models import AgentInterrupt
    from runs.models import AgentRun, Conversation, SegmentUsage

    User = get_user_model()
    started = time.perf_counter()
    for model in (AgentInterrupt, SegmentUsage, AgentRun, Conversation):
        model.objects.all().delete()
    User.objects.filter(username__startswith="bench-").delete()
    Group.objects.filter(name__startswith="bench-").delete()
    reviewers = User.objects.bulk_create([
        User(username=f"bench-reviewer-{i:02d}", is_staff=True, password="!")
        for i in range(REVIEWERS)])
    permission = Permission.objects.get(codename="decide_interrupt")
    for user in reviewers:
        user.user_permissions.add(permission)
    groups = Group.objects.bulk_create([Group(name=f"bench-{n}") for n in ("ops", "legal")])
    conversations = Conversation.objects.bulk_create([
        Conversation(owner=reviewers[i % REVIEWERS], agent=AGENTS[i % len(AGENTS)],
                     title=f"c{i}") for i in range(RUNS)], batch_size=4000)
    runs = AgentRun.objects.bulk_create([
        AgentRun(owner=c.owner, conversation=c, agent=c.agent, agent_version="1",
                 thread_id=str(c.id), status=AgentRun.Status.COMPLETED, segments=PER_RUN)
        for c in conversations], batch_size=4000)
    rows = []
    for r, run in enumerate(runs):
        for k in range(PER_RUN):
            i = r * PER_RUN + k
            kind, request, decision = question(i)
            rows.append(AgentInterrupt(run=run, interrupt_id=f"bench{i:08x}", kind=kind,
                                       request=request, decision=decision,
                                       status=AgentInterrupt.Status.APPLIED,
                                       decided_by=reviewers[i % REVIEWERS]))
    AgentInterrupt.objects.bulk_create(rows, batch_size=5000)
    link = AgentInterrupt.assigned_groups.through
    link.objects.bulk_create([link(agentinterrupt_id=row.pk, group_id=groups[n % 2].pk)
                              for n, row in enumerate(rows[::7])], batch_size=5000)
    SegmentUsage.objects.bulk_create([
        SegmentUsage(run=run, segment=1, model_name=MODELS[n % len(MODELS)], calls=3,
                     input_tokens=1000 + n % 500, output_tokens=200 + n % 100,
                     total_tokens=1200 + n % 500 + n % 100)
        for n, run in enumerate(runs)], batch_size=5000)
    with connection.cursor() as cursor:
        # auto_now_add set every created_at to now: spread them over 30 days; 85 % decided
        # up to 8 hours later, the rest pending (some escalated or past a deadline) or
        # expired.
        cursor.execute("""
            UPDATE hitl_agentinterrupt SET created_at = now() - random() * interval '30 days';
            UPDATE hitl_agentinterrupt SET
              decided_at = CASE WHEN random() < 0.85
                                THEN created_at + random() * interval '8 hours' END;
            UPDATE hitl_agentinterrupt SET status = CASE WHEN random() < 0.5 THEN 'pending'
                                                         ELSE 'expired' END,
              decided_by_id = NULL, decision = NULL,
              expires_at = created_at + interval '1 day',
              escalated_at = CASE WHEN random() < 0.3 THEN created_at + interval '1 hour' END
              WHERE decided_at IS NULL;
            UPDATE runs_segmentusage SET created_at = now() - random() * interval '30 days';""")
        # As autovacuum leaves a settled table: its visibility map set (index-only scans).
        cursor.execute("VACUUM ANALYZE")
    print(f"seeded {len(rows)} interrupts over {len(runs)} runs in "
          f"{time.perf_counter() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--reseed", action="store_true")
    args = parser.parse_args()

    from django.contrib.auth import get_user_model

    from hitl.models import AgentInterrupt

    use_database(BENCH_DB)
    if args.reseed or AgentInterrupt.objects.count() != RUNS * PER_RUN:
        seed()
    base = "/admin/insights/"
    cases = [("30 days, unfiltered", base), ("agent=support", base + "?agent=support"),
             ("format=hitl_request", base + "?format=hitl_request"),
             ("group=bench-ops", base + "?group=bench-ops"),
             ("all three", base + "?agent=dev&format=review&group=bench-legal"),
             ("CSV backlog", base + "?export=backlog")]
    client = Client()
    client.force_login(get_user_model().objects.get(username="bench-reviewer-00"))
    print(f"{AgentInterrupt.objects.count()} interrupts; {args.samples} requests each, "
          "in-process (Django test client), interleaved")
    print(f"before: {load()}")
    times: dict[str, list[float]] = {name: [] for name, _ in cases}
    queries: dict[str, int] = {}
    for _name, url in cases:  # warm
        assert client.get(url).status_code == 200, url
    for _ in range(args.samples):
        for name, url in cases:
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(url)
                times[name].append(time.perf_counter() - started)
            assert response.status_code == 200, (url, response.status_code)
            queries[name] = len(captured)
    print(f"{'page':<22} {'p50 ms':>8} {'p99 ms':>8} {'queries':>8}")
    for name, _ in cases:
        print(f"{name:<22} {percentile(times[name], 50) * 1000:8.1f} "
              f"{percentile(times[name], 99) * 1000:8.1f} {queries[name]:8d}")
    print(f"after: {load()}")


if __name__ == "__main__":
    main()
