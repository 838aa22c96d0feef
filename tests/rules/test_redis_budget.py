"""Redis commands per operation of a full ``dev`` run, worker side, pinned (issue 37).

The run of ``test_statement_budget``, in this process: the web side through the REST door
with a token, the worker side as the Celery task does it (``lifecycle.run_claim``, then
``executor.execute``). Counted with Redis's ``MONITOR`` (``tests/redis_monitor.py``): the
commands this process's connections send between two marks, in the server's own order.
The commands a Lua script runs (the event store's ``SEND_LUA``) are its own, not round
trips, and not counted here. The broker's side of a task (delivery, ack) is counted with
the real worker in ``tests/execution/test_broker_commands.py``.

A change that adds commands to a worker operation fails here until its budget line below
is raised on purpose, with its reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client

from execution import executor, lifecycle
from execution.checkpointer import close_checkpointer
from hitl.models import AgentInterrupt
from runs.models import AgentRun
from streams.publish import wait_published
from tests.redis_monitor import RedisMonitor, Watched, this_process_clients

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]

# Worker operation → (commands, why that many). Each command is a socket write of the
# publisher (``streams.publish._Sender``: answers read later, in one read for many).
BUDGET: dict[str, tuple[int, str]] = {
    # The claim's fence on the run's channel with the segment's RUN_STARTED, sent on its
    # commit (one EVAL; before issue 37's Redis work the RUN_STARTED was a second one).
    "claim (worker)": (1, "fence + RUN_STARTED"),
    # One EVAL per LangGraph chunk that maps to events, as it comes (STEP_STARTED, the
    # text, STEP_FINISHED: 2 or 4 per pause of `dev`); on the pause's commit ONE EVAL for
    # the closing events and the queue's notices (streams.publish.published_together; two
    # before); the notification's task (LPUSH on the queue).
    "pause (worker)": (6, "4 chunks' events, closing events + notices, notify task"),
    # As a pause, with 5 chunks (the text's start and end); the closing events and the
    # counter's expiry in one EVAL (two before).
    "finish (worker)": (7, "5 chunks' events, closing events + counter expiry, notify task"),
}
# A new connection's handshake (once per connection, not per operation).
SETUP = {"HELLO", "CLIENT"}
EVENT_TYPE = re.compile(r'type\\*":\\*"([A-Z_]+)')
# A whole run's worker side: 5 claims (5), pauses 4 + 3 x 6, the finish 7. Before: 44.
RUN_BUDGET = 34


@pytest.fixture(autouse=True, scope="module")
def _pool_closed_after() -> Iterator[None]:
    yield
    close_checkpointer()  # its pooled connections would keep the test database open


def test_a_full_dev_run_sends_redis_at_most_its_budget(users, unconsumed_queue,
                                                       settings) -> None:
    settings.AGENTSITE_CANCEL_CHECK_SECONDS = 3600
    web = Client(HTTP_AUTHORIZATION=f"Token {users['owner_token']}")
    seen: list[tuple[str, Counter[str]]] = []  # (operation, command names)

    with RedisMonitor() as watch:
        def counted(name: str, operation: Callable[[], Any]) -> Any:
            result = operation()
            wait_published()  # what it sent has run before the mark
            watch.mark(str(len(seen)))
            seen.append((name, Counter()))
            return result

        def segment(run_id: str) -> None:
            claimed = counted("claim (worker)",
                              lambda: lifecycle.run_claim(run_id=run_id, worker="budget"))
            assert claimed is not None
            counted("segment end", lambda: executor.execute(claimed))
            ended = AgentRun.objects.values_list("status", flat=True).get(pk=run_id)
            seen[-1] = ("pause (worker)" if ended == "paused" else "finish (worker)",
                        seen[-1][1])

        response = counted("start (web)", lambda: web.post(
            "/api/runs/", {"agent": "dev", "input": {"topic": "budget"}},
            content_type="application/json"))
        assert response.status_code == 201, response.content
        run_id = response.json()["id"]
        segment(run_id)
        for payload in ANSWERS:
            pending = (AgentInterrupt.objects.filter(run_id=run_id, status="pending")
                       .values_list("interrupt_id", flat=True).get())
            response = counted("resume (web)", lambda p=pending, body=payload: web.post(
                f"/api/runs/{run_id}/resume/", {"interrupt_id": p, "payload": body},
                content_type="application/json"))
            assert response.status_code == 202, response.content
            segment(run_id)
        ours = this_process_clients()
    assert AgentRun.objects.values_list("status", flat=True).get(pk=run_id) == "completed"
    for index, (name, _) in enumerate(seen):
        sent = [c for c in watch.spans[str(index)].sent_by(ours) if c.name not in SETUP]
        seen[index] = (name, Watched.names(sent))
        if name in BUDGET:  # what each worker command carried
            print(name, [(c.name, EVENT_TYPE.findall(" ".join(c.args)) or c.args[:1])
                         for c in sent])

    print("\noperation: Redis commands sent, each time")
    for name in ("start (web)", "resume (web)", *BUDGET):
        rows = [names for op, names in seen if op == name]
        print(f"  {name}: " + ", ".join(
            f"{sum(n.values())} {dict(n)}" for n in rows))
    worker = [(name, sum(n.values())) for name, n in seen if name in BUDGET]
    total = sum(count for _, count in worker)
    print(f"  worker side, whole run: {total} commands")
    over = [f"{name}: {count} commands, budget {BUDGET[name][0]}"
            for name, count in worker if count > BUDGET[name][0]]
    assert not over, over
    assert total <= RUN_BUDGET, f"{total} worker commands per full dev run, budget {RUN_BUDGET}"
