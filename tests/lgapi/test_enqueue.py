"""``multitask_strategy="enqueue"`` through langgraph-sdk: a run started on a busy thread
waits (``pending``) behind the thread's run, also while that run waits for a person, and
starts when it ends (completed or cancelled), in order; a waiting run can be cancelled,
and is skipped then; the roles of the thread apply."""

from __future__ import annotations

import pytest

from runs.models import AgentRun, AuditLog

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Apollo"}, {"value": "green"}, {"values": ["metrics", "tracing"]},
           {"approved": True}]


def _status(run: dict) -> str:
    return AgentRun.objects.get(pk=run["run_id"]).status


def _queued_after(run: dict) -> dict:
    """The audit payload of the run's ``waiting → queued`` row."""
    return AuditLog.objects.get(run_id=run["run_id"], from_status="waiting",
                                to_status="queued").payload


def test_enqueued_runs_start_in_order_when_the_thread_frees(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "dev", input={"topic": "one"})
    assert "__interrupt__" in client.runs.join(tid, first["run_id"])

    # Behind a run waiting for a person: the question is not dropped, the new run waits.
    second = client.runs.create(tid, "dev", input={"topic": "two"},
                                multitask_strategy="enqueue")
    assert second["status"] == "pending" and _status(second) == "waiting"
    third = client.runs.create(tid, "dev", input={"topic": "three"},
                               multitask_strategy="enqueue")
    assert client.runs.get(tid, third["run_id"])["status"] == "pending"
    # The thread still says what its run waits for; the first run still takes answers.
    assert client.threads.get(tid)["status"] == "interrupted"
    assert tid in [t["thread_id"] for t in client.threads.search(status="interrupted")]
    assert AuditLog.objects.get(run_id=second["run_id"], to_status="waiting").payload[
        "behind_run"] == first["run_id"]

    for answer in ANSWERS:
        out = client.runs.wait(tid, "dev", command={"resume": answer})
    assert "__interrupt__" not in out and _status(first) == "completed"
    # Its end queued the oldest waiting run, in the same transaction; the worker ran it
    # to its own first question. The third still waits, now behind the second.
    assert _queued_after(second) == {"after_run": first["run_id"],
                                     "after_status": "completed"}
    joined = client.runs.join(tid, second["run_id"])
    assert joined["topic"] == "two" and "__interrupt__" in joined
    assert _status(third) == "waiting"

    # The second run ends by a cancel: the third goes next.
    client.runs.cancel(tid, second["run_id"])
    assert _queued_after(third)["after_run"] == second["run_id"]
    assert client.runs.join(tid, third["run_id"])["topic"] == "three"
    assert [r["run_id"] for r in client.runs.list(tid)] == [
        third["run_id"], second["run_id"], first["run_id"]]


def test_a_waiting_run_cancelled_is_skipped_and_roles_apply(lg):
    owner, outsider, reviewer = lg("owner"), lg("outsider"), lg("reviewer")
    tid = owner.threads.create()["thread_id"]
    first = owner.runs.create(tid, "dev", input={"topic": "one"})
    owner.runs.join(tid, first["run_id"])
    # Someone else's thread: the same 404 as a missing one, nothing made.
    with pytest.raises(Exception) as other:
        outsider.runs.create(tid, "dev", input={"topic": "x"}, multitask_strategy="enqueue")
    assert other.value.status_code == 404
    second = owner.runs.create(tid, "dev", input={"topic": "two"},
                               multitask_strategy="enqueue")
    third = owner.runs.create(tid, "dev", input={"topic": "three"},
                              multitask_strategy="enqueue")
    with pytest.raises(Exception) as hidden:
        outsider.runs.cancel(tid, second["run_id"])
    assert hidden.value.status_code == 404 and _status(second) == "waiting"

    # A reviewer cancels the waiting second run: it never starts; nothing else moves.
    assert reviewer.runs.cancel(tid, second["run_id"])["status"] == "interrupted"
    assert _status(second) == "cancelled" and _status(first) == "paused"
    assert _status(third) == "waiting"
    row = AuditLog.objects.get(run_id=second["run_id"], to_status="cancelled")
    assert (row.from_status, row.actor_label, row.surface) == (
        "waiting", "reviewer", "langgraph")

    # The first run is cancelled: the third (not the cancelled second) starts.
    owner.runs.cancel(tid, first["run_id"])
    assert _queued_after(third) == {"after_run": first["run_id"],
                                    "after_status": "cancelled"}
    assert owner.runs.join(tid, third["run_id"])["topic"] == "three"
    assert not AuditLog.objects.filter(run_id=second["run_id"], to_status="queued",
                                       from_status="waiting").exists()


def test_a_failed_run_hands_the_thread_on(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "faulty", input={})
    assert "__interrupt__" in client.runs.join(tid, first["run_id"])
    second = client.runs.create(tid, "faulty", input={"messages": ["next"]},
                                multitask_strategy="enqueue")
    assert AgentRun.objects.get(pk=first["run_id"]).runs_waiting

    # The answer makes the first run's graph raise: its failure queues the second.
    assert "__error__" in client.runs.wait(tid, "faulty", command={"resume": {"value": "x"}},
                                           raise_error=False)
    assert "__interrupt__" in client.runs.join(tid, second["run_id"])
    rows = list(AuditLog.objects.filter(run_id=second["run_id"], action="run.status")
                .values_list("from_status", "to_status", "payload"))
    assert rows[:2] == [
        ("", "waiting", {"input": {}, "message": "next", "behind_run": first["run_id"],
                         "behind_status": "paused"}),
        ("waiting", "queued", {"after_run": first["run_id"], "after_status": "failed"})]
    assert rows[2][:2] == ("queued", "running")


def test_interrupt_cancels_the_waiting_runs_too(lg):
    client = lg("owner")
    tid = client.threads.create()["thread_id"]
    first = client.runs.create(tid, "dev", input={"topic": "one"})
    client.runs.join(tid, first["run_id"])
    second = client.runs.create(tid, "dev", input={"topic": "two"},
                                multitask_strategy="enqueue")
    # As LangGraph Server: the thread's pending and running runs are cancelled, ours runs.
    third = client.runs.create(tid, "dev", input={"topic": "three"},
                               multitask_strategy="interrupt")
    assert (_status(first), _status(second)) == ("cancelled", "cancelled")
    assert client.runs.join(tid, third["run_id"])["topic"] == "three"
    assert not AuditLog.objects.filter(run_id=second["run_id"], to_status="queued").exists()
