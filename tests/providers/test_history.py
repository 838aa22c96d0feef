"""Issue 28 finding 1: after a run on a conversation is cancelled or fails with a tool
call the model made unanswered, the next run of that conversation sends the provider a
valid history (each call answered by a tool message saying what became of it), so a
provider that validates histories as OpenAI does answers instead of a 400."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from agentsite.celery import app as celery_app
from execution.deadlines import sweep
from runs.models import AgentRun
from tests.helpers import answer_and_wait, pending, start_run, wait_run
from tests.providers.conftest import PROVIDER_QUEUE
from tests.providers.fake_openai import Recorded, Reply


def calls_and_answers(request: Recorded) -> tuple[dict[str, dict], dict[str, str]]:
    """The tool calls in the request's history (id -> call) and the tool messages that
    answer them (id -> content)."""
    calls, answers = {}, {}
    for message in request.messages:
        for call in message.get("tool_calls") or []:
            calls[call["id"]] = call
        if message.get("role") == "tool":
            answers[message["tool_call_id"]] = str(message.get("content"))
    return calls, answers


def next_run(client: Any, agent: str, first: dict, message: str) -> dict:
    """Start a run on ``first``'s conversation and wait for it to end."""
    run = start_run(client, agent, thread_id=first["conversation_id"], message=message)
    return wait_run(client, run["id"], {"completed", "failed", "paused"}, timeout=30)


def assert_no_400(provider) -> None:
    refused = [r for r in provider.requests() if r.status == 400]
    assert not refused, [r.reply for r in refused]


def test_after_a_cancel_the_next_run_sends_the_cancelled_call_answered(papi, provider):
    owner = papi("owner")
    first = start_run(owner, "assistant", message="help me with my order")
    first = wait_run(owner, first["id"], "paused")
    assert pending(first)["kind"] == "select"
    [asked] = provider.requests()
    call_id = asked.reply["tool_calls"][0]["id"]
    assert asked.reply["tool_calls"][0]["function"]["name"] == "ask_choice"

    cancelled = owner.post(f"/api/runs/{first['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"

    second = next_run(owner, "assistant", first, "What are your opening hours?")
    assert second["status"] == "completed", second["error"]
    assert_no_400(provider)
    [request] = provider.requests(containing="opening hours")
    calls, answers = calls_and_answers(request)
    assert list(calls) == [call_id]
    # The cancelled call is answered, in words that say so and who did it.
    assert "cancel" in answers[call_id].lower() and "owner" in answers[call_id], answers
    assert [m["role"] for m in request.messages][-3:] == ["assistant", "tool", "user"]
    # The run's answer is the provider's.
    assert second["result"]["answer"] == request.reply["text"]

    # And the conversation stays usable: a third run sends the same valid history.
    third = next_run(owner, "assistant", first, "Thanks, and returns?")
    assert third["status"] == "completed", third["error"]
    assert_no_400(provider)
    _, answers3 = calls_and_answers(provider.requests(containing="and returns")[0])
    assert answers3[call_id] == answers[call_id]


def test_after_a_failed_run_the_next_run_sends_the_unrun_call_answered(papi, provider):
    owner = papi("owner")
    # The model calls kb_search without its required argument: the tool step raises (the
    # agent's bug, not the provider's), so the run fails with the call unanswered.
    provider.script(Reply(tool_calls=[{"name": "kb_search", "args": {}, "id": "call_bad"}]))
    first = start_run(owner, "assistant", message="search for something")
    first = wait_run(owner, first["id"], "failed")
    assert first["error"]

    second = next_run(owner, "assistant", first, "What are your opening hours?")
    assert second["status"] == "completed", second["error"]
    assert_no_400(provider)
    [request] = provider.requests(containing="opening hours")
    calls, answers = calls_and_answers(request)
    assert "call_bad" in calls and "fail" in answers.get("call_bad", "").lower(), request.messages


def test_adopter_agent_after_a_cancel(papi, provider):
    """create_agent + HumanInTheLoopMiddleware (tests/adopter_agents.py) on the provider:
    cancelled at its approval, both calls are answered in the next run's history."""
    owner = papi("owner")
    first = start_run(owner, "provider_adopter", message="email alice, delete the report")
    first = wait_run(owner, first["id"], "paused")
    [asked] = provider.requests()
    ids = {c["id"] for c in asked.reply["tool_calls"]}
    assert {c["function"]["name"] for c in asked.reply["tool_calls"]} == {"send_email",
                                                                           "delete_file"}
    assert owner.post(f"/api/runs/{first['id']}/cancel/").status_code == 200

    provider.script(Reply(text="Okay, nothing sent."))
    second = next_run(owner, "provider_adopter", first, "never mind")
    assert second["status"] == "completed", second["error"]
    assert_no_400(provider)
    [request] = provider.requests(containing="never mind")
    calls, answers = calls_and_answers(request)
    assert set(calls) == ids and set(answers) == ids, request.messages
    assert all("cancel" in text.lower() for text in answers.values()), answers
    assert AgentRun.objects.get(pk=second["id"]).status == "completed"


def test_a_rejected_tool_call_is_answered_and_the_run_goes_on(papi, provider):
    """Tool approval's reject: the model reads why the call did not run, in this run and
    the next (no repair needed: the approval node answers it)."""
    owner = papi("owner")
    first = start_run(owner, "assistant", message="Please file a ticket about the login page")
    first = wait_run(owner, first["id"], "paused")
    [asked] = provider.requests()
    call_id = asked.reply["tool_calls"][0]["id"]
    assert asked.reply["tool_calls"][0]["function"]["name"] == "file_ticket"
    done = answer_and_wait(owner, first, {"decision": "reject", "reason": "duplicate"},
                           until="completed")
    _, answers = calls_and_answers(provider.requests()[-1])
    assert "rejected" in answers[call_id] and "duplicate" in answers[call_id], answers
    assert done["result"]["answer"] == provider.requests()[-1].reply["text"]

    second = next_run(owner, "assistant", first, "What are your opening hours?")
    assert second["status"] == "completed", second["error"]
    assert_no_400(provider)


def test_after_a_question_expired_the_next_run_sends_the_call_answered(papi, provider):
    owner = papi("owner")
    first = start_run(owner, "provider_assistant_deadline", message="help me with my order")
    first = wait_run(owner, first["id"], "paused")
    [asked] = provider.requests()
    call_id = asked.reply["tool_calls"][0]["id"]
    # Beat's deadline sweep, as it runs once the question is overdue; its repair task
    # goes to the provider worker.
    before, celery_app.conf.task_default_queue = (celery_app.conf.task_default_queue,
                                                  PROVIDER_QUEUE)
    try:
        assert sweep(now=timezone.now() + timedelta(minutes=2))["runs_expired"] == 1
    finally:
        celery_app.conf.task_default_queue = before
    assert wait_run(owner, first["id"], "expired")["status"] == "expired"

    second = next_run(owner, "provider_assistant_deadline", first,
                      "What are your opening hours?")
    assert second["status"] == "completed", second["error"]
    assert_no_400(provider)
    _, answers = calls_and_answers(provider.requests(containing="opening hours")[0])
    assert "expired" in answers[call_id], answers
