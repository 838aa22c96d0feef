"""Issue 28 finding 2: a cancelled run's late model call cannot overwrite its thread.

A call on our client is cut by the cancel (tests/providers/test_cancel_cuts_call.py);
an adopter's model on its SDK's own client (``provider_uncut``) runs on. The provider
hangs on the run's model call; the run is cancelled meanwhile, and its
listeners get RUN_FINISHED then, while the call still hangs. A new run on the same
thread completes. When the hung call finally answers (with a tool call, as in the
issue), the superseded segment writes nothing: the thread's latest checkpoint still
holds the completed run's exchange, the model's next request sees it, and the cancelled
run's channel carries nothing after its RUN_FINISHED.
"""

from __future__ import annotations

import re
import time

import httpx
from langchain_core.messages import AIMessage, HumanMessage

from execution.checkpointer import thread_values
from runs.models import AgentRun
from tests.helpers import published_events, start_run, wait_run
from tests.providers.fake_openai import Reply
from tests.sse_client import SseStream

STALE = Reply(tool_calls=[{"name": "kb_search", "args": {"query": "stale"},
                           "id": "call_stale"}])


def segments_running(worker) -> int:
    """Segment tasks the provider worker has received and not yet ended (its log)."""
    said = re.findall(r"Task runs\.tasks\.run_execute\[[^\]]+\] (\w+)", worker.log())
    return said.count("received") - sum(1 for w in said if w in ("succeeded", "raised",
                                                                   "retry"))


def wait_segments_running(worker, count: int) -> None:
    deadline = time.monotonic() + 30
    while segments_running(worker) != count:
        assert time.monotonic() < deadline, worker.log()[-3000:]
        time.sleep(0.05)


def test_a_cancelled_runs_late_answer_writes_nothing(papi, provider, plive):
    owner = papi("owner")
    # The call stalls mid-stream (kept alive, so no read timeout ends it) until released.
    provider.fault("stall")
    first = start_run(owner, "provider_uncut", message="first question")
    provider.wait_hanging(1)
    listener = httpx.Client(base_url=plive["base_url"], headers=owner.headers,
                            timeout=httpx.Timeout(10))
    with SseStream(listener, f"/api/runs/{first['id']}/events/") as stream:
        assert stream.status == 200
        seen = [stream.next().json()]
        assert seen[0]["type"] == "RUN_STARTED"
        cancelled_at = time.monotonic()
        assert owner.post(f"/api/runs/{first['id']}/cancel/").json()["status"] == "cancelled"
        while seen[-1]["type"] != "RUN_FINISHED":
            seen.append(stream.next().json())
        heard_after = time.monotonic() - cancelled_at
    listener.close()
    # Told at cancel time: the model call has not returned.
    assert provider.hanging == 1, "RUN_FINISHED came only after the hung call ended"
    print(f"RUN_FINISHED {heard_after:.2f} s after the cancel")

    # A new run on the same thread, while the old call still hangs.
    second = start_run(owner, "provider_uncut", thread_id=first["conversation_id"],
                       message="second question")
    second = wait_run(owner, second["id"], "completed", timeout=20)
    answer = second["result"]["answer"]
    assert provider.hanging == 1, "the hung call ended before the second run completed"

    # The hung call answers now, with a tool call the stale segment would act on.
    wait_segments_running(plive["worker"], 1)  # the stale one only
    provider.script(STALE)
    provider.release()
    wait_segments_running(plive["worker"], 0)  # the stale segment has ended
    assert provider.requests()[0].answer == "stall, then ok"
    assert provider.requests()[0].reply["tool_calls"][0]["id"] == "call_stale"

    # The thread's latest checkpoint holds the second run's exchange, not the stale call.
    messages = thread_values(second["thread_id"])["messages"]
    assert isinstance(messages[-1], AIMessage) and messages[-1].content == answer
    assert isinstance(messages[-2], HumanMessage) and messages[-2].content == "second question"
    assert not any(c["id"] == "call_stale" for m in messages
                   for c in getattr(m, "tool_calls", []) or [])
    # Nothing of the stale segment on either run's channel; the cancelled run's ends
    # with its RUN_FINISHED.
    assert published_events(first["id"]) == seen
    for run_id in (first["id"], second["id"]):
        assert "call_stale" not in str(published_events(run_id))
    assert AgentRun.objects.get(pk=first["id"]).status == "cancelled"

    # The model's context on the next run is the completed exchange.
    third = start_run(owner, "provider_uncut", thread_id=first["conversation_id"],
                      message="third question")
    assert wait_run(owner, third["id"], "completed", timeout=20)
    [request] = provider.requests(containing="third question")
    contents = [(m["role"], m.get("content")) for m in request.messages]
    assert ("user", "second question") in contents and ("assistant", answer) in contents
    assert "call_stale" not in str(request.messages)
    pages = owner.get(f"/api/conversations/{first['conversation_id']}/messages/").json()
    assert "call_stale" not in str(pages) and "stale" not in str(pages["messages"])
