"""The fake provider answers as OpenAI does, to OpenAI's own client through LangChain:
streams with usage, tool calls, the strict history check, and each fault as the SDK
raises it. In-process (no worker)."""

from __future__ import annotations

import time

import httpx
import openai
import pytest
from langchain.chat_models import init_chat_model
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from tests.providers.fake_openai import Reply

ASK = {"name": "ask_choice", "args": {"question": "Which?", "options": ["a", "b"]},
       "id": "call_1", "type": "tool_call"}


def model(provider, **options):
    return init_chat_model("openai:gpt-4o-mini", base_url=provider.base_url, api_key="test",
                           max_retries=0, timeout=2, **options)


def test_streams_text_with_usage_when_asked(provider):
    provider.script(Reply(text="Hello there friend", prompt_tokens=11, completion_tokens=3))
    chunks = list(model(provider, stream_usage=True).stream([HumanMessage("hi")]))
    message = chunks[0]
    for chunk in chunks[1:]:
        message += chunk
    assert message.content == "Hello there friend"
    usage = message.usage_metadata
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (11, 3, 14)
    [request] = provider.requests()
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.usage == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}


def test_tool_calls_stream_and_invoke(provider):
    provider.script(Reply(tool_calls=[{"name": "ask_choice", "args": {"question": "Which?",
                                                                      "options": ["a", "b"]}}]))
    provider.script(Reply(tool_calls=[{"name": "kb_search", "args": {"query": "x"},
                                       "id": "call_kb"}]))
    chunks = list(model(provider).stream([HumanMessage("help me with my order")]))
    message = chunks[0]
    for chunk in chunks[1:]:
        message += chunk
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [
        ("ask_choice", {"question": "Which?", "options": ["a", "b"]})]
    reply = model(provider, disable_streaming=True).invoke([HumanMessage("search")])
    assert reply.tool_calls[0]["id"] == "call_kb" and reply.usage_metadata["total_tokens"] > 0
    assert provider.requests()[-1].body.get("stream") in (None, False)


def test_default_policy_asks_about_an_order(provider):
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}}
             for n in ("ask_choice", "kb_search")]
    reply = model(provider).bind(tools=tools).invoke([HumanMessage("help me with my order")])
    assert reply.tool_calls[0]["name"] == "ask_choice"


@pytest.mark.parametrize("history, unanswered", [
    ([AIMessage("", tool_calls=[ASK])], "call_1"),
    ([AIMessage("", tool_calls=[ASK]), HumanMessage("next")], "call_1"),
    ([AIMessage("", tool_calls=[ASK, {**ASK, "id": "call_2"}]),
      ToolMessage("User chose: a", tool_call_id="call_1"), HumanMessage("next")], "call_2"),
])
def test_history_with_an_unanswered_tool_call_is_a_400(provider, history, unanswered):
    with pytest.raises(openai.BadRequestError) as err:
        model(provider).invoke([HumanMessage("help me with my order"), *history])
    assert err.value.status_code == 400
    body = err.value.body
    assert body["type"] == "invalid_request_error"
    assert body["message"].startswith("An assistant message with 'tool_calls' must be "
                                      "followed by tool messages responding to each "
                                      "'tool_call_id'.")
    assert unanswered in body["message"]
    assert provider.requests()[-1].answer == "400 history"


def test_orphan_tool_message_is_a_400_and_a_valid_history_passes(provider):
    with pytest.raises(openai.BadRequestError, match="must be a response to a preceeding"):
        model(provider).invoke([HumanMessage("hi"), ToolMessage("x", tool_call_id="call_9")])
    answered = [HumanMessage("help me with my order"), AIMessage("", tool_calls=[ASK]),
                ToolMessage("Cancelled by owner", tool_call_id="call_1"), HumanMessage("next")]
    assert model(provider).invoke(answered).content.startswith("You asked: next")


@pytest.mark.parametrize("kind, error", [
    ("429", openai.RateLimitError), ("500", openai.InternalServerError),
    ("401", openai.AuthenticationError), ("400", openai.BadRequestError),
])
def test_status_faults_then_heal(provider, kind, error):
    provider.fault(kind, times=2, **({"retry_after": 7} if kind == "429" else {}))
    for _ in range(2):
        with pytest.raises(error) as err:
            model(provider).invoke([HumanMessage("hi")])
    if kind == "429":
        assert err.value.response.headers["retry-after"] == "7"
    assert model(provider).invoke([HumanMessage("hi")]).content.startswith("You asked: hi")
    assert [r.answer for r in provider.requests()] == [kind, kind, "ok"]


def test_hang_times_out_on_the_client_and_release_answers(provider):
    provider.fault("hang")
    with pytest.raises(openai.APITimeoutError):
        model(provider).invoke([HumanMessage("hi")])
    provider.wait_hanging(1)
    provider.release()
    deadline = time.monotonic() + 5
    while provider.requests()[0].answer == "hang":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert provider.requests()[0].answer == "hang, client gone"
    # A hang with a bound answers after it, as a slow provider does.
    provider.reset()
    provider.fault("hang", seconds=0.2)
    assert model(provider).invoke([HumanMessage("slow")]).content.startswith("You asked")
    assert provider.requests()[-1].answer == "hang, then ok"


def test_a_stalled_stream_outlasts_the_read_timeout(provider):
    """A stall keeps the stream alive with SSE comments: a 2 s read timeout does not end a
    2.5 s call (the slow provider of issue 28 finding 2)."""
    provider.fault("stall", seconds=2.5)
    text = "".join(str(c.content) for c in model(provider).stream([HumanMessage("slow")]))
    assert text.startswith("You asked: slow")
    assert provider.requests()[-1].answer == "stall, then ok"


@pytest.mark.parametrize("kind", ["malformed", "cut"])
def test_broken_streams(provider, kind):
    provider.fault(kind)
    with pytest.raises((ValueError, httpx.HTTPError, openai.APIError)) as err:
        list(model(provider).stream([HumanMessage("hi")]))
    causes, cause = [], err.value
    while cause is not None:
        causes.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    # The SDK's own words for each: a body cut short, a chunk that is not JSON.
    expected = "incomplete chunked read" if kind == "cut" else "Expecting value"
    assert any(expected in c for c in causes), causes
    # The client may leave before the server has written the rest (" (client gone)").
    assert provider.requests()[-1].answer.startswith(kind)
    assert "".join(c.content for c in model(provider).stream([HumanMessage("ok")]))


def test_control_api_over_http(provider):
    http = httpx.Client(base_url=provider.root_url)
    assert http.post("/_control/fault", json={"kind": "500"}).json() == {"ok": True}
    assert http.post("/_control/script", json={"replies": [{"text": "scripted"}]}).status_code \
        == 200
    with pytest.raises(openai.InternalServerError):
        model(provider).invoke([HumanMessage("hi")])
    assert model(provider).invoke([HumanMessage("hi")]).content == "scripted"
    recorded = http.get("/_control/requests").json()
    assert [r["answer"] for r in recorded] == ["500", "ok"]
    assert recorded[1]["headers"]["authorization"] == "Bearer test"
    assert http.post("/_control/fault", json={"kind": "nope"}).status_code == 400
