"""Valid history, always (issue 28): a run that ends while a model's tool calls are
unanswered (cancelled, failed, expired) leaves the thread's state with a ToolMessage for
every call, saying it did not run and why; the thread's next run then runs normally.

Real worker, real Postgres: the repair task is the worker's, enqueued on commit; the
assertions read the thread's latest checkpoint (``execution.checkpointer``).
"""

from __future__ import annotations

import time
from datetime import timedelta

import psycopg
import pytest
from django.db import transaction
from django.utils import timezone
from langchain_core.messages import AIMessage, ToolMessage

import tests.agent_catalog  # noqa: F401 - the test agents, for the repair called in-process
from execution import history, lifecycle
from execution.checkpointer import conninfo, get_checkpointer, thread_values
from hitl import lifecycle as interrupts
from hitl.models import AgentInterrupt
from runs.models import AgentRun
from runs.services import run_locked, run_transition
from tests.helpers import start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

# (agent, first message: pauses at a question inside its tool calls, next message)
ASSISTANT = ("assistant", "How do I reset?", "Where do I download my invoices?")
# create_agent + HumanInTheLoopMiddleware: paused in the middleware's after_model, before
# its two tool calls ran.
ADOPTER = ("adopter_batched", "email alice, delete the report", "")


def calls_and_results(thread_id: str) -> tuple[list[str], dict[str, str]]:
    """The tool call ids of the thread's AI messages, and each call's ToolMessage text
    from the tool messages right after its AI message (where a provider looks)."""
    messages = thread_values(thread_id).get("messages") or []
    calls: list[str] = []
    results: dict[str, str] = {}
    for i, message in enumerate(messages):
        if isinstance(message, AIMessage):
            calls += [c["id"] for c in message.tool_calls]
            j = i + 1
            while j < len(messages) and isinstance(messages[j], ToolMessage):
                results[messages[j].tool_call_id] = str(messages[j].content)
                j += 1
    return calls, results


def checkpoints(thread_id: str) -> int:
    return sum(1 for _ in get_checkpointer().list({"configurable": {"thread_id": thread_id}}))


def wait_repaired(thread_id: str, timeout: float = 20) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while True:
        calls, results = calls_and_results(thread_id)
        if calls and set(calls) <= set(results):
            return results
        if time.monotonic() > deadline:
            raise AssertionError(f"thread {thread_id}: calls {calls}, results {results}")
        time.sleep(0.1)


def paused(client, agent: str, message: str) -> dict:
    run = wait_run(client, start_run(client, agent, message=message)["id"], "paused")
    calls, results = calls_and_results(run["thread_id"])
    assert calls and not set(calls) <= set(results)  # the setup: calls left unanswered
    return run


def next_run_runs(client, agent: str, thread_id: str, message: str) -> dict:
    """A new run on the thread runs normally: it completes, or pauses at a new question
    of its own (the adopter's scripted model asks again), and its history is valid."""
    body = {"thread_id": thread_id, **({"message": message} if message else {})}
    run = wait_run(client, start_run(client, agent, **body)["id"], {"completed", "paused"})
    if agent == "assistant":
        assert run["status"] == "completed", run
        assert "**Billing and invoices**" in run["result"]["answer"]
    else:
        assert run["status"] == "paused" and len(run["pending_interrupts"]) == 1, run
    # Every call before the new run's own open ones has its result.
    calls, results = calls_and_results(thread_id)
    open_calls = calls[len(calls) - 2:] if run["status"] == "paused" else []
    assert set(calls) - set(open_calls) <= set(results)
    return run


@pytest.mark.parametrize("agent, first, second", [ASSISTANT, ADOPTER],
                         ids=["assistant", "create_agent"])
def test_cancel_while_paused(api, agent, first, second):
    client = api("owner")
    run = paused(client, agent, first)
    r = client.post(f"/api/runs/{run['id']}/cancel/")
    assert r.status_code == 200, r.text
    results = wait_repaired(run["thread_id"])
    assert set(results.values()) == {"Not run: the run was cancelled by owner."}
    next_run_runs(client, agent, run["thread_id"], second)


def test_cancel_by_a_reviewer_names_the_reviewer(api):
    owner, reviewer = api("owner"), api("reviewer")
    run = paused(owner, *ASSISTANT[:2])
    assert reviewer.post(f"/api/runs/{run['id']}/cancel/").status_code == 200
    results = wait_repaired(run["thread_id"])
    assert set(results.values()) == {"Not run: the run was cancelled by reviewer."}


@pytest.mark.parametrize("agent, first, second", [ASSISTANT, ADOPTER],
                         ids=["assistant", "create_agent"])
def test_failed_run(api, agent, first, second):
    client = api("owner")
    run = paused(client, agent, first)
    # The run fails through the worker's service (as when its resume segment's claim
    # fails): its tool calls never ran.
    assert lifecycle.run_fail(run_id=run["id"], error="boom") is not None
    results = wait_repaired(run["thread_id"])
    assert set(results.values()) == {"Not run: the run failed."}
    next_run_runs(client, agent, run["thread_id"], second)


@pytest.mark.parametrize("agent, first, second", [ASSISTANT, ADOPTER],
                         ids=["assistant", "create_agent"])
def test_expired_question(api, agent, first, second):
    client = api("owner")
    run = paused(client, agent, first)
    # Its deadline passes (no default answer): the beat's sweep (every 0.5 s) expires it.
    AgentInterrupt.objects.filter(run_id=run["id"]).update(
        expires_at=timezone.now() - timedelta(seconds=1))
    wait_run(client, run["id"], "expired")
    results = wait_repaired(run["thread_id"])
    assert set(results.values()) == {"Not run: the question expired."}
    next_run_runs(client, agent, run["thread_id"], second)


def end_without_task(run_id: str, actor) -> None:
    """End a paused run as a cancel does (status, audit row, its question) but with no
    repair task: as when the task is lost (broker down) or for a thread broken before
    the repair existed."""
    with transaction.atomic():
        row = run_locked(run_id)
        interrupts.interrupts_cancel_pending(run=row, actor=actor)
        run_transition(run=row, to=AgentRun.Status.CANCELLED, actor=actor)


def test_first_segment_repairs_when_the_task_was_lost(api, users):
    client = api("owner")
    run = paused(client, *ASSISTANT[:2])
    end_without_task(run["id"], users["owner"])
    first_calls, results = calls_and_results(run["thread_id"])
    assert not set(first_calls) <= set(results)
    # The next run's first segment answers them before its model is called.
    next_run_runs(client, "assistant", run["thread_id"], ASSISTANT[2])
    _, results = calls_and_results(run["thread_id"])
    assert {results[c] for c in first_calls} == {"Not run: the run was cancelled by owner."}


def test_repair_is_idempotent(api):
    client = api("owner")
    run = paused(client, *ASSISTANT[:2])
    before = checkpoints(run["thread_id"])
    assert client.post(f"/api/runs/{run['id']}/cancel/").status_code == 200
    results = wait_repaired(run["thread_id"])
    assert checkpoints(run["thread_id"]) == before + 1  # one update_state
    # A second repair (a duplicate task) writes nothing.
    assert history.repair_ended(run["id"]) == 0
    assert checkpoints(run["thread_id"]) == before + 1
    assert calls_and_results(run["thread_id"])[1] == results


def test_repair_never_writes_beside_an_active_run(api):
    client = api("owner")
    first = paused(client, *ASSISTANT[:2])
    assert client.post(f"/api/runs/{first['id']}/cancel/").status_code == 200
    thread_id = first["thread_id"]
    wait_repaired(thread_id)
    # The thread's next run pauses at the same question: its calls are unanswered, and
    # rightly so. A late repair task of the first run must leave them alone.
    second = wait_run(client, start_run(client, "assistant", message=ASSISTANT[1],
                                        thread_id=thread_id)["id"], "paused")
    assert second["thread_id"] == thread_id
    written = checkpoints(thread_id)
    assert history.repair_ended(first["id"]) == 0
    assert checkpoints(thread_id) == written
    calls, results = calls_and_results(thread_id)
    assert not set(calls) <= set(results)
    # The paused run is still answered as usual.
    r = client.post(f"/api/runs/{second['id']}/resume/", json={
        "interrupt_id": second["pending_interrupts"][0]["interrupt_id"],
        "payload": {"value": "Password reset"}})
    assert r.status_code == 202, r.text
    wait_run(client, second["id"], {"completed", "paused"})


def test_repair_skips_while_the_thread_lock_is_held(api, users):
    """The task does not write while another holder (a segment's start, another repair)
    has the thread's lock; once it is free the repair goes through."""
    client = api("owner")
    run = paused(client, *ASSISTANT[:2])
    end_without_task(run["id"], users["owner"])
    thread_id = run["thread_id"]
    written = checkpoints(thread_id)
    with psycopg.connect(conninfo(), autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s::bigint)", [history.lock_key(thread_id)])
        assert history.repair_ended(run["id"]) == 0
        assert checkpoints(thread_id) == written
        # Released here, not by the close (the server ends the session a moment later).
        other.execute("SELECT pg_advisory_unlock(%s::bigint)", [history.lock_key(thread_id)])
    assert history.repair_ended(run["id"]) > 0
    wait_repaired(thread_id, timeout=0)


def test_graph_without_messages_is_left_alone(api):
    """A graph without a ``messages`` channel (``faulty``: fails after its question is
    answered): nothing to repair, nothing written."""
    from execution.graphs import compiled

    client = api("owner")
    run = wait_run(client, start_run(client, "faulty")["id"], "paused")
    r = client.post(f"/api/runs/{run['id']}/resume/", json={
        "interrupt_id": run["pending_interrupts"][0]["interrupt_id"], "payload": {"value": "x"}})
    assert r.status_code == 202, r.text
    wait_run(client, run["id"], "failed")
    written = checkpoints(run["thread_id"])
    assert history.repair(compiled("faulty"), run["thread_id"], reason="x") == 0
    assert history.repair_ended(run["id"]) == 0
    assert checkpoints(run["thread_id"]) == written


def test_a_thread_broken_before_gets_the_answers_in_place(api, users):
    """A thread broken before the repair existed: a later message already follows the
    unanswered calls. Their tool messages go right after the AI message (where a
    provider looks), the list rewritten with RemoveMessage(REMOVE_ALL_MESSAGES)."""
    from langchain_core.messages import HumanMessage

    from execution.graphs import compiled

    client = api("owner")
    run = paused(client, *ASSISTANT[:2])
    end_without_task(run["id"], users["owner"])
    thread_id = run["thread_id"]
    graph = compiled("assistant")
    # What the old code left: the next run's input appended after the unanswered call.
    graph.update_state({"configurable": {"thread_id": thread_id}},
                       {"messages": [HumanMessage("and another thing", id="later")]},
                       as_node="agent")
    before = thread_values(thread_id)["messages"]
    assert history.repair_ended(run["id"]) == 1
    after = thread_values(thread_id)["messages"]
    assert [m.id for m in after if m.id != after[2].id] == [m.id for m in before]
    assert isinstance(after[1], AIMessage) and isinstance(after[2], ToolMessage)
    assert after[2].tool_call_id == after[1].tool_calls[0]["id"]
    assert after[2].content == "Not run: the run was cancelled by owner."
    assert after[-1].id == "later"
    assert history.repair_ended(run["id"]) == 0


def test_question_cancelled_by_its_answer(api):
    """The question itself cancelled by an answer (status cancelled): ask_choice has no
    decline, so the graph ends the run cancelled; the tool message names who cancelled it
    (their decision), not the worker that ended the run."""
    owner, reviewer = api("owner"), api("reviewer")
    run = paused(owner, *ASSISTANT[:2])
    item = run["pending_interrupts"][0]
    r = reviewer.post(f"/api/runs/{run['id']}/resume/", json={"resume": [
        {"interrupt_id": item["interrupt_id"], "status": "cancelled"}]})
    assert r.status_code == 202, r.text
    wait_run(owner, run["id"], "cancelled")
    results = wait_repaired(run["thread_id"])
    assert set(results.values()) == {"Not run: the run was cancelled by reviewer."}


def test_a_retried_failed_run_goes_on_from_the_repaired_state(api):
    """POST /retry/ continues the failed run from its last checkpoint: the repaired one,
    so the model reads the call answered ("Not run: the run failed.") and the run ends."""
    client = api("owner")
    run = paused(client, *ASSISTANT[:2])
    assert lifecycle.run_fail(run_id=run["id"], error="boom") is not None
    wait_repaired(run["thread_id"])
    r = client.post(f"/api/runs/{run['id']}/retry/")
    assert r.status_code in (200, 202), r.text
    done = wait_run(client, run["id"], "completed")
    assert done["result"]["answer"]
    calls, results = calls_and_results(run["thread_id"])
    assert set(calls) <= set(results)
