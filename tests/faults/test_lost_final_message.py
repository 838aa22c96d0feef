"""A worker SIGKILLed after the final text's checkpoint and before the run's finish (in
the agent's last step, ``linger``, which writes nothing): the worker that takes the
segment over has no text of its own to add, yet the run ends with its final text (read
back from the checkpoints the lost worker wrote), in the assistant message, the REST
messages and the AG-UI events. Without it the run completed with an
empty message (issue 27, finding 2).

And a later run on a conversation's thread whose worker died before its first
checkpoint starts over from its input, where the takeover used to go on from the
thread's latest checkpoint (the earlier run's end: nothing left to run, the run
"completed" with an empty message and the earlier run's result).
"""

from __future__ import annotations

import signal

import pytest

from execution.checkpointer import thread_values
from runs.models import AgentRun, Message
from tests.agui_rules import validate_events
from tests.faults.cluster import client, cluster_fixture, effects, wait_all
from tests.helpers import answer, published_events, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)
cluster = pytest.fixture(name="cluster")(cluster_fixture)

HOLD = "LINGER_SECONDS"  # tests/summary_agents.py: its last step waits that long
SUMMARY = "Summary: tide is named Ada."


def _ai_texts(thread_id: str) -> list[str]:
    return [m.content for m in thread_values(thread_id).get("messages", []) if m.type == "ai"]


@pytest.mark.parametrize("agent", ["lost_summary", "lost_summary_updates"])
def test_worker_killed_before_the_finish_the_takeover_keeps_the_final_text(
        cluster, users, agent):
    c = cluster()
    first = c.worker("worker-a")
    _web, url = c.web()
    api = client(url, users["owner_token"])
    run = start_run(api, agent=agent, input={"topic": "tide"})
    run = wait_run(api, run["id"], "paused")
    first.stop()  # idle: the held worker below takes the resume
    env = c.env
    c.env = {**env, HOLD: "120"}  # waits after the summary's checkpoint
    held = c.worker("worker-held")
    c.env = env

    assert answer(api, run, {"value": "Ada"}).status_code == 202
    # The summary is checkpointed; the run is not finished: kill the worker there.
    wait_all(lambda: SUMMARY in _ai_texts(run["thread_id"]), timeout=30)
    assert AgentRun.objects.get(pk=run["id"]).status == "running"
    held.stop(signal.SIGKILL)
    c.worker("worker-b")  # takes the segment over once its lease lapses

    done = wait_run(api, run["id"], "completed", timeout=60)
    assert f"run {run['id']}: segment 2 taken over" in c.logs()
    expected = "Draft for tide. " + SUMMARY
    assert "".join(_ai_texts(run["thread_id"])) == expected  # the checkpoint's text
    assert done["result"] == {"summary": SUMMARY}
    message = Message.objects.get(run_id=run["id"], role="assistant")
    assert message.content == expected
    rest = api.get(f"/api/conversations/{done['conversation_id']}/messages/").json()["messages"]
    assert [m["content"] for m in rest if m["role"] == "assistant"] == [expected]

    events = published_events(run["id"])
    validate_events(events)  # the takeover went on in the lost worker's AG-UI run
    assert events[-1]["type"] == "RUN_FINISHED"
    assert events[-1]["result"]["status"] == "completed"
    snapshot = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"][-1]
    assistant = [m for m in snapshot["messages"] if m["id"] == str(message.pk)]
    assert [m["content"] for m in assistant] == [expected]
    # The text events of the run's assistant message carry it once, in order.
    deltas = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"
                     and e["messageId"] == str(message.pk))
    assert deltas == expected


def test_later_run_on_a_thread_lost_before_its_first_checkpoint_starts_over(cluster, users):
    # Checkpoints only at a segment's end: a worker killed mid-segment stored none.
    c = cluster(GRAPH_DURABILITY="exit")
    fast = c.worker("worker-a")
    _web, url = c.web()
    api = client(url, users["owner_token"])
    first = wait_run(api, start_run(api, agent="slow_counted")["id"], "paused", timeout=60)
    assert answer(api, first, {"value": "one"}).status_code == 202
    wait_run(api, first["id"], "completed", timeout=60)
    thread = first["thread_id"]
    work = ["work1", "work2", "work3", "work4"]
    assert effects(thread) == work
    fast.stop()
    # Slow steps (3 s) for the worker to kill: on a loaded machine the kill below must
    # still land in work1. The others stay fast.
    env = c.env
    c.env = {**env, "SLOW_STEP_SECONDS": "3"}
    worker = c.worker("worker-slow")
    c.env = env

    second = start_run(api, agent="slow_counted", thread_id=thread)
    wait_all(lambda: AgentRun.objects.get(pk=second["id"]).status == "running", timeout=30)
    worker.stop(signal.SIGKILL)  # in work1's sleep: nothing of this run is stored
    assert effects(thread) == work, "killed too late: the segment had done work1"
    c.worker("worker-b")

    second = wait_run(api, second["id"], {"paused", "completed"}, timeout=60)
    assert f"run {second['id']}: segment 1 taken over" in c.logs()
    assert second["status"] == "paused"  # it ran from its input up to its question
    assert effects(thread) == [*work, "work1", "work2"]
    assert answer(api, second, {"value": "two"}).status_code == 202
    done = wait_run(api, second["id"], "completed", timeout=60)
    assert done["result"]["name"] == "two"
