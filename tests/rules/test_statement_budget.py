"""SQL statements and transactions per operation of a full ``dev`` run, pinned (issue 37).

One run (start + 4 answers → completed), web and worker side, in this process: the web
side through the REST door with a token (``django.test.Client``: middleware, token
authentication, the service), the worker side as the Celery task does it
(``lifecycle.run_claim``, then ``executor.execute``: the graph, then the pause or the
finish). Counted on Django's connection with its public ``execute_wrapper``: every
statement, and every transaction (a statement sent while the connection is idle starts
one: an autocommit statement, or the first of an atomic block). The checkpointer's own
writes go through its psycopg pool, not Django's connection: counted apart, as connections
borrowed from that pool (``ConnectionPool.get_stats``; a fenced write is one borrow and
one transaction).

A change that adds statements fails here until its budget line below is raised on
purpose, with its reason.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from psycopg.pq import TransactionStatus

from execution import executor, lifecycle
from execution.checkpointer import close_checkpointer, get_checkpointer
from hitl.models import AgentInterrupt
from runs.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]

# operation → (statements, transactions, why that many). Per operation as one full run
# meets it: a pause (4 times) and a finish (once), a claim and a resume (4 times each).
BUDGET: dict[str, tuple[int, int, str]] = {
    # One transaction (the request's: agentsite.request_transaction): the token lookup
    # (plain SQL, agentsite.token_lookup), its last_used_at (at most once a minute per
    # token), ONE statement for the conversation, the run, its messages and its audit row
    # (runs.sql.writes_together).
    "start (web)": (3, 1, "token, token last used, conversation+run+messages+audit"),
    # One transaction, the token's lookup included (agentsite.request_transaction): the
    # token; the run's lock with its questions locked and its usage rows read in the same
    # statement (runs.sql.run_lock(related=...)); ONE statement for the decisions + the
    # run's resume + their audit rows (runs.sql.writes_together).
    "resume (web)": (3, 1, "token, lock+questions+usage, decisions+resume+audit"),
    # One transaction: the lock, with synchronous_commit off, the answers to resume with
    # (locked) and the start's text in the same statement (runs.sql.run_lock); ONE
    # statement for running + audit.
    "claim (worker)": (2, 1, "lock+answers+start text, running+audit"),
    # One transaction: the lock with the notification facts, the standing approvals and
    # the conversation's messages in its statement; ONE statement for paused + the
    # questions' INSERT + answers applied + text appended + the notification outbox row +
    # audit.
    "pause (worker)": (2, 1, "lock+facts+standing approvals+messages, "
                             "paused+questions+applied+text+outbox+audit"),
    # One transaction: the lock with the messages, ONE statement for completed + answers
    # applied + text appended + the outbox row + audit.
    "finish (worker)": (2, 1, "lock+messages, completed+applied+text+outbox+audit"),
}
# The whole run, Django's connection, web and worker (the checkpointer's apart). Before
# issue 37: 94 statements, 25 transactions; then 57 / 25. Now: start 3, resumes 4 × 3,
# claims 5 × 2, pauses 4 × 2, finish 2.
RUN_BUDGET = 35
# Transactions per whole run: start 1, resumes 4 × 1, claims 5 × 1, segment ends 5 × 1.
RUN_TRANSACTIONS = 15


class Tally:
    """Statements and transactions on Django's connection (an ``execute_wrapper``)."""

    def __init__(self) -> None:
        self.statements = 0
        self.transactions = 0
        self.sql: list[str] = []

    def __call__(self, execute: Callable[..., Any], sql: str, params: Any, many: bool,
                 context: dict[str, Any]) -> Any:
        if context["connection"].connection.info.transaction_status == TransactionStatus.IDLE:
            self.transactions += 1
        self.statements += 1
        self.sql.append(sql)
        return execute(sql, params, many, context)


@pytest.fixture(autouse=True, scope="module")
def _pool_closed_after() -> Iterator[None]:
    yield
    close_checkpointer()  # its pooled connections would keep the test database open


def _borrowed() -> int:
    return get_checkpointer().conn.get_stats().get("requests_num", 0)


def test_a_full_dev_run_spends_at_most_its_budget(users, unconsumed_queue, settings) -> None:
    # Deterministic: no look at the run's row between steps (the pause / finish checks
    # the lease under its lock all the same).
    settings.AGENTSITE_CANCEL_CHECK_SECONDS = 3600
    web = Client(HTTP_AUTHORIZATION=f"Token {users['owner_token']}")
    seen: list[tuple[str, int, int, int]] = []  # (operation, statements, transactions, cp)

    def counted(operation: Callable[[], Any]) -> tuple[Any, Tally, int]:
        tally, borrowed = Tally(), _borrowed()
        with connection.execute_wrapper(tally):
            result = operation()
        return result, tally, _borrowed() - borrowed

    def segment(run_id: str) -> None:
        claimed, tally, cp = counted(lambda: lifecycle.run_claim(run_id=run_id,
                                                                 worker="budget"))
        assert claimed is not None
        seen.append(("claim (worker)", tally.statements, tally.transactions, cp))
        _, tally, cp = counted(lambda: executor.execute(claimed))
        ended = AgentRun.objects.values_list("status", flat=True).get(pk=run_id)
        name = "pause (worker)" if ended == "paused" else "finish (worker)"
        seen.append((name, tally.statements, tally.transactions, cp))

    response, tally, cp = counted(lambda: web.post(
        "/api/runs/", {"agent": "dev", "input": {"topic": "budget"}},
        content_type="application/json"))
    assert response.status_code == 201, response.content
    run_id = response.json()["id"]
    seen.append(("start (web)", tally.statements, tally.transactions, cp))
    segment(run_id)
    for payload in ANSWERS:
        pending = (AgentInterrupt.objects.filter(run_id=run_id, status="pending")
                   .values_list("interrupt_id", flat=True).get())
        response, tally, cp = counted(lambda p=pending, body=payload: web.post(
            f"/api/runs/{run_id}/resume/", {"interrupt_id": p, "payload": body},
            content_type="application/json"))
        assert response.status_code == 202, response.content
        seen.append(("resume (web)", tally.statements, tally.transactions, cp))
        segment(run_id)
    assert AgentRun.objects.values_list("status", flat=True).get(pk=run_id) == "completed"

    print("\noperation: statements / transactions / checkpointer borrows, each time")
    for name in BUDGET:
        rows = [row for row in seen if row[0] == name]
        print(f"  {name}: " + ", ".join(f"{s}/{t}/{c}" for _, s, t, c in rows))
    total = sum(s for _, s, _, _ in seen)
    counts = Counter(name for name, *_ in seen)
    print(f"  whole run: {total} statements, "
          f"{sum(t for _, _, t, _ in seen)} transactions, "
          f"{sum(c for *_, c in seen)} checkpointer borrows; {dict(counts)}")
    over = [f"{name}: {s} statements / {t} transactions, budget {BUDGET[name][:2]}"
            for name, s, t, _ in seen if s > BUDGET[name][0] or t > BUDGET[name][1]]
    assert not over, over
    assert total <= RUN_BUDGET, f"{total} statements per full dev run, budget {RUN_BUDGET}"
    transactions = sum(t for _, _, t, _ in seen)
    assert transactions <= RUN_TRANSACTIONS, (
        f"{transactions} transactions per full dev run, budget {RUN_TRANSACTIONS}")
