"""Answer it differently (issue 39): a fork from a past answer, over REST on the live
server and worker. The original run and thread stay as they were; the fork is refused
when its checkpoint was pruned, its agent version is not compatible, or the person could
not have answered the original."""

from __future__ import annotations

import json

import pytest
import redis
from django.conf import settings
from django.db import connection

from execution import checkpoint_pruning
from runs.models import AgentRun, AuditLog, Conversation
from tests.helpers import answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)

ANSWERS = [{"value": "Vega"}, {"value": "blue"}, {"values": ["alerts"]}, {"approved": True}]


def _checkpoints(thread_id: str) -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", [thread_id])
        return cur.fetchone()[0]


def _completed_dev(client) -> tuple[dict, list[dict]]:
    """A dev run answered to its end, and its interrupts in the order asked."""
    run = wait_run(client, start_run(client, input={"topic": "fork"})["id"], "paused")
    asked = []
    for payload in ANSWERS:
        asked.append(pending(run))
        run = answer_and_wait(client, run, payload)
    assert run["status"] == "completed", run
    return run, asked


def _fork(client, item: dict, payload) -> object:
    return client.post(f"/api/interrupts/{item['id']}/fork/", json={"payload": payload})


def test_a_fork_from_the_second_answer_reaches_a_different_end(api):
    owner, outsider = api("owner"), api("outsider")
    original, asked = _completed_dev(owner)
    second = asked[1]
    before = _checkpoints(original["thread_id"])
    conversations = Conversation.objects.count()

    # Refused, with nothing written: an answer the question did not offer, a still
    # open question's id by someone else, a person who may not see the run.
    bad = _fork(owner, second, {"value": "purple"})
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_payload", bad.text
    assert _fork(outsider, second, {"value": "red"}).status_code == 404
    assert outsider.get(f"/api/interrupts/{second['id']}/fork/").status_code == 404
    assert Conversation.objects.count() == conversations

    preview = owner.get(f"/api/interrupts/{second['id']}/fork/")
    assert preview.status_code == 200, preview.text
    assert preview.json()["tool_calls_after"] == []  # dev calls no tool

    made = _fork(owner, second, {"value": "red"})
    assert made.status_code == 201, made.text
    fork = made.json()["run"]
    assert fork["forked_from"] == original["id"]
    assert fork["fork_interrupt_ref"] == second["interrupt_id"]
    assert fork["fork_checkpoint_id"] == preview.json()["checkpoint_id"]
    assert fork["thread_id"] != original["thread_id"]

    # The fork goes on from the color question: extras and approval are asked again,
    # the name is not (the fork sees the history up to the fork point).
    fork = wait_run(owner, fork["id"], "paused")
    assert pending(fork)["request"]["type"] == "multiSelect"
    fork = answer_and_wait(owner, fork, {"values": ["metrics"]})
    fork = answer_and_wait(owner, fork, {"approved": True})
    assert fork["status"] == "completed", fork
    assert fork["result"]["color"] == "red" and fork["result"]["name"] == "Vega"
    assert fork["result"]["extras"] == ["metrics"]

    # The original is untouched: its result, its thread's checkpoints.
    again = owner.get(f"/api/runs/{original['id']}/").json()
    assert again["result"] == original["result"] and again["result"]["color"] == "blue"
    assert again["status"] == "completed"
    assert _checkpoints(original["thread_id"]) == before

    # Where it came from, on the run and its conversation; the audit row names the actor.
    row = AgentRun.objects.get(pk=fork["id"])
    assert row.conversation.forked_from_id == row.forked_from_id
    forked = AuditLog.objects.get(action="forked")
    assert (str(forked.run_id), forked.actor_label, forked.interrupt_ref) == (
        original["id"], "owner", second["interrupt_id"])
    assert forked.payload["fork_run"] == fork["id"]


def test_a_fork_lists_the_tool_calls_the_original_ran_after_that_point(api):
    owner = api("owner")
    run = wait_run(owner, start_run(owner, "adopter_batched", message="email, delete")["id"],
                   "paused")
    item = pending(run)
    approve = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
    assert owner.post(f"/api/interrupts/{item['id']}/decision/",
                      json={"payload": approve}).status_code == 202
    wait_run(owner, run["id"], "completed")

    preview = owner.get(f"/api/interrupts/{item['id']}/fork/").json()
    calls = preview["tool_calls_after"]
    assert [(c["name"], c["args"]) for c in calls] == [
        ("send_email", {"to": "alice@example.com", "body": "hi"}),
        ("delete_file", {"path": "/tmp/report"})], preview

    # The fork rejects both: no tool runs in the fork's thread; the POST says again
    # what the original did.
    made = _fork(owner, item, {"decisions": [{"type": "reject"}, {"type": "reject"}]})
    assert made.status_code == 201, made.text
    assert made.json()["fork_point"]["tool_calls_after"] == calls
    fork = wait_run(owner, made.json()["run"]["id"], "completed")
    ran = redis.Redis(**settings.EVENTSTREAM_REDIS).lrange(
        f"adopter-tools:{fork['thread_id']}", 0, -1)
    assert [json.loads(x) for x in ran] == []


def test_pruned_and_incompatible_forks_are_refused(api):
    owner = api("owner")
    original, asked = _completed_dev(owner)
    conversations = Conversation.objects.count()

    AgentRun.objects.filter(pk=original["id"]).update(agent_version="0.0-retired")
    old = _fork(owner, asked[1], {"value": "red"})
    assert old.status_code == 409 and old.json()["code"] == "version_mismatch", old.text
    AgentRun.objects.filter(pk=original["id"]).update(agent_version="1")

    checkpoint_pruning.sweep(older_than=0)
    pruned = _fork(owner, asked[1], {"value": "red"})
    assert pruned.status_code == 410 and pruned.json()["code"] == "checkpoint_pruned", \
        pruned.text
    assert Conversation.objects.count() == conversations
    assert not AuditLog.objects.filter(action="forked").exists()


def test_a_fork_applies_the_questions_policy_again(api):
    owner, reviewer = api("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner, "policy_foureyes")["id"], "paused")
    item = pending(run)
    assert reviewer.get(f"/api/interrupts/{item['id']}/fork/").status_code == 409  # open
    assert reviewer.post(f"/api/interrupts/{item['id']}/decision/",
                         json={"payload": {"approved": True}}).status_code == 202
    wait_run(owner, run["id"], "completed")
    # Four-eyes: the requester could not have answered it, so may not fork it.
    refused = _fork(owner, item, {"approved": False})
    assert refused.status_code == 403 and refused.json()["code"] == \
        "requester_may_not_decide", refused.text
    made = _fork(reviewer, item, {"approved": False, "reason": "other way"})
    assert made.status_code == 201, made.text
    fork = wait_run(owner, made.json()["run"]["id"], {"rejected", "completed"})
    assert fork["owner"] == "owner"


def test_a_fork_of_a_quorum_question_needs_its_quorum_again(api):
    owner, reviewer = api("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner, "policy_quorum")["id"], "paused")
    item = pending(run)
    for client in (owner, reviewer):
        assert client.post(f"/api/interrupts/{item['id']}/decision/",
                           json={"payload": {"approved": True}}).status_code == 202
    wait_run(owner, run["id"], "completed")
    made = _fork(owner, item, {"approved": True})
    assert made.status_code == 201, made.text
    fork = made.json()["run"]
    assert fork["status"] == "paused"  # one vote of two: the question waits for another
    (copy,) = fork["pending_interrupts"]
    assert copy["approvals"]["approvals"] == 1 and copy["approvals"]["required"] == 2
    assert owner.post(f"/api/interrupts/{copy['id']}/decision/",
                      json={"payload": {"approved": True}}).json()["code"] == "already_voted"
    assert reviewer.post(f"/api/interrupts/{copy['id']}/decision/",
                         json={"payload": {"approved": True}}).status_code == 202
    assert wait_run(owner, fork["id"], "completed")["forked_from"] == run["id"]
