"""Issue 28 finding 4: what a run cost. The chat model asks the provider for usage in
its streams (a custom base URL included), and the run's segments record the tokens the
provider reported: per segment (runs.models.SegmentUsage) and as the run's totals."""

from __future__ import annotations

from runs.models import SegmentUsage
from tests.helpers import answer_and_wait, pending, published_events, start_run, wait_run
from tests.providers.fake_openai import MODEL, Reply

ASK = {"name": "ask_choice", "args": {"question": "Which one do you mean?",
                                      "options": ["Order status", "Returns and refunds"]}}


def test_usage_per_segment_and_per_run_is_what_the_provider_reported(papi, provider):
    owner = papi("owner")
    provider.script(Reply(tool_calls=[ASK], prompt_tokens=120, completion_tokens=15),
                    Reply(text="Your order ships tomorrow.", prompt_tokens=200,
                          completion_tokens=30))
    run = wait_run(owner, start_run(owner, "assistant", message="help me with my order")["id"],
                   "paused")
    assert pending(run)["kind"] == "select"
    # Recorded with the pause: a run read as paused already shows its segment's tokens.
    assert (run["input_tokens"], run["total_tokens"]) == (120, 135)
    done = answer_and_wait(owner, run, {"value": "Order status"}, until="completed")
    assert done["result"]["answer"] == "Your order ships tomorrow."

    requests = provider.requests()
    assert len(requests) == 2
    # Usage asked for in every stream, though the base URL is not OpenAI's.
    for request in requests:
        assert request.body.get("stream") is True
        assert request.body.get("stream_options", {}).get("include_usage") is True, request.body
    sent = [r.usage for r in requests]
    assert sent == [{"prompt_tokens": 120, "completion_tokens": 15, "total_tokens": 135},
                    {"prompt_tokens": 200, "completion_tokens": 30, "total_tokens": 230}]

    assert (done["input_tokens"], done["output_tokens"], done["total_tokens"]) == (320, 45, 365)
    assert MODEL in done["model_name"], done["model_name"]
    assert [(u["segment"], u["calls"], u["input_tokens"], u["output_tokens"],
             u["total_tokens"]) for u in done["usage"]] == [(1, 1, 120, 15, 135),
                                                           (2, 1, 200, 30, 230)]
    rows = SegmentUsage.objects.filter(run_id=run["id"]).order_by("segment")
    assert [(r.segment, r.calls, r.input_tokens, r.output_tokens, r.total_tokens)
            for r in rows] == [(1, 1, 120, 15, 135), (2, 1, 200, 30, 230)]
    assert all(MODEL in r.model_name for r in rows)
    # The run list shows the totals too.
    listed = owner.get("/api/runs/", params={"agent": "assistant"}).json()["results"]
    assert [(r["id"], r["total_tokens"]) for r in listed] == [(run["id"], 365)]
    assert published_events(run["id"])[-1]["type"] == "RUN_FINISHED"


def test_a_segment_with_two_model_calls_sums_them(papi, provider):
    owner = papi("owner")
    # kb_search runs without a question: two model calls in one segment.
    provider.script(Reply(tool_calls=[{"name": "kb_search", "args": {"query": "shipping"}}],
                          prompt_tokens=50, completion_tokens=5),
                    Reply(text="Shipping takes two days.", prompt_tokens=70,
                          completion_tokens=9))
    run = start_run(owner, "assistant", message="How long does shipping take?")
    done = wait_run(owner, run["id"], "completed")
    assert [(u["segment"], u["calls"], u["input_tokens"], u["output_tokens"],
             u["total_tokens"]) for u in done["usage"]] == [(1, 2, 120, 14, 134)]
    assert (done["input_tokens"], done["output_tokens"], done["total_tokens"]) == (120, 14, 134)
