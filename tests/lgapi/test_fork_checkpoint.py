"""The LangGraph API's run create with a ``checkpoint_id`` and ``command.resume`` forks
(issue 39): a new run on a new thread, from the question pending at that checkpoint, with
the new answer; the original thread is left as it was."""

from __future__ import annotations

import httpx
import pytest

from runs.models import AgentRun
from tests.execution.test_fork import _completed_dev

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_from_a_checkpoint_forks(api, lg):
    original, asked = _completed_dev(api("owner"))
    client = lg("owner")
    tid = original["thread_id"]
    history = client.threads.get_history(tid, limit=50)
    (at,) = [s for s in history
             if [i["id"] for i in s["interrupts"]] == [asked[1]["interrupt_id"]]]
    checkpoint = at["checkpoint"]["checkpoint_id"]

    with pytest.raises(httpx.HTTPStatusError, match="422"):  # a checkpoint without an answer
        client.runs.wait(tid, "dev", input={}, checkpoint_id=checkpoint)

    out = client.runs.wait(tid, "dev", command={"resume": {"value": "red"}},
                           checkpoint_id=checkpoint)
    fork = AgentRun.objects.get(forked_from_id=original["id"])
    assert fork.fork_checkpoint_id == checkpoint and fork.thread_id != tid
    assert out["color"] == "red" and out["__interrupt__"][0]["value"]["type"] == "multiSelect"
    assert client.threads.get_state(tid)["values"]["color"] == "blue"  # untouched
