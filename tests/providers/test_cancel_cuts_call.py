"""Issue 35 item 3: a cancel cuts the model call in flight.

The provider stalls mid-stream (a call no read timeout ends). The run is cancelled: the
worker hears of it at once (execution.stop) and closes the call's connection
(execution.calls), so the provider sees its client gone within a second, nothing asks
again (no SDK retry, no run retry), and no tokens are recorded for the cut call. The
worker goes on serving: the next run completes.
"""

from __future__ import annotations

import time

from runs.models import AgentRun, SegmentUsage
from tests.helpers import start_run, wait_run


def test_a_cancel_cuts_the_model_call_in_flight(papi, provider):
    owner = papi("owner")
    provider.fault("stall")
    run = start_run(owner, "assistant", message="a question for a stalled provider")
    provider.wait_hanging(1)
    cancelled_at = time.monotonic()
    assert owner.post(f"/api/runs/{run['id']}/cancel/").json()["status"] == "cancelled"
    while provider.hanging:
        assert time.monotonic() - cancelled_at < 1.5, "the call still hangs after the cancel"
        time.sleep(0.02)
    cut_after = time.monotonic() - cancelled_at
    print(f"provider saw the connection closed {cut_after:.2f} s after the cancel")
    [call] = provider.requests()
    assert call.answer == "stall, client gone", call.answer

    # Nothing asks again: no SDK retry, no run retry (a few seconds: retries would be
    # 0.5 s to 2 s apart here, tests/providers/conftest.py).
    time.sleep(3)
    assert len(provider.requests()) == 1, [r.answer for r in provider.requests()]
    stored = AgentRun.objects.get(pk=run["id"])
    assert stored.status == AgentRun.Status.CANCELLED
    assert not SegmentUsage.objects.filter(run_id=run["id"]).exists()
    assert stored.total_tokens in (0, None), stored.total_tokens

    # The worker (and its connection pool) goes on: the next run on the thread completes.
    again = start_run(owner, "assistant", thread_id=run["conversation_id"],
                      message="and now?")
    assert wait_run(owner, again["id"], "completed", timeout=20)["result"]["answer"]
