"""The assistant agent (first seed's reactAgent) asks with each ask tool, searches the
knowledge base and answers from it — on the offline model, through the real worker."""

from __future__ import annotations

import json

import pytest

from runs.models import Message
from tests.agui_rules import validate_events
from tests.helpers import answer_and_wait, pending, published_events, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def _ask(client, message: str) -> dict:
    run = start_run(client, "assistant", message=message)
    return wait_run(client, run["id"], {"paused", "completed", "failed"})


def _tool_calls(run_id: str) -> list[tuple[str, dict]]:
    """(name, args) of every tool call the worker streamed, in order."""
    calls, names, args = [], {}, {}
    for event in published_events(run_id):
        if event["type"] == "TOOL_CALL_START":
            names[event["toolCallId"]] = event["toolCallName"]
            args[event["toolCallId"]] = ""
        elif event["type"] == "TOOL_CALL_ARGS":
            args[event["toolCallId"]] += event["delta"]
        elif event["type"] == "TOOL_CALL_END":
            calls.append((names[event["toolCallId"]], json.loads(args[event["toolCallId"]])))
    return calls


def _results(run_id: str) -> list[str]:
    return [e["content"] for e in published_events(run_id) if e["type"] == "TOOL_CALL_RESULT"]


def test_a_clear_question_is_answered_from_the_knowledge_base_without_asking(api):
    client = api("owner")
    run = _ask(client, "Where do I download my invoices?")
    assert run["status"] == "completed", run
    assert [name for name, _ in _tool_calls(run["id"])] == ["kb_search"]
    answer = run["result"]["answer"]
    assert "**Billing and invoices**" in answer and "PDF" in answer
    assert Message.objects.get(pk=run["assistant_message_id"]).content == answer
    (events,) = validate_events(published_events(run["id"]))
    # The model's answer streamed word by word into the one assistant message.
    deltas = [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert len(deltas) > 10 and "".join(deltas) == answer
    assert {e["messageId"] for e in events if e["type"].startswith("TEXT_MESSAGE")} == {
        run["assistant_message_id"]}


def test_vague_request_asks_input(api):
    client = api("owner")
    run = _ask(client, "help")
    question = pending(run)
    assert question["kind"] == "input"
    run = answer_and_wait(client, run, {"value": "rate limits of the API"})
    assert run["status"] == "completed", run
    assert [n for n, _ in _tool_calls(run["id"])] == ["ask_input", "kb_search"]
    assert "User answered: rate limits of the API" in _results(run["id"])
    assert "**API rate limits**" in run["result"]["answer"]


def test_ambiguous_request_asks_choice(api):
    client = api("owner")
    run = _ask(client, "How do I reset?")
    question = pending(run)
    assert question["kind"] == "select"
    assert [o["value"] for o in question["request"]["options"]] == ["Password reset",
                                                                    "Two-factor reset"]
    run = answer_and_wait(client, run, {"value": "Two-factor reset"})
    assert run["status"] == "completed", run
    assert "User chose: Two-factor reset" in _results(run["id"])
    assert "recovery code" in run["result"]["answer"]
    assert "Password reset" not in run["result"]["answer"]


def test_request_for_several_topics_asks_multi_choice(api):
    client = api("owner")
    run = _ask(client, "Give me an overview of a few topics")
    question = pending(run)
    assert question["kind"] == "multiSelect"
    run = answer_and_wait(client, run, {"values": ["Data export", "API rate limits"]})
    assert run["status"] == "completed", run
    assert "User chose: Data export, API rate limits" in _results(run["id"])
    answer = run["result"]["answer"]
    assert "**Data export**" in answer and "**API rate limits**" in answer


def test_irreversible_request_asks_confirm_and_cancel_stops(api):
    client = api("owner")
    run = _ask(client, "I want to delete my account")
    question = pending(run)
    assert question["kind"] == "modal"
    assert [a["value"] for a in question["request"]["actions"]] == ["proceed", "cancel"]
    run = answer_and_wait(client, run, {"action": "cancel"})
    assert run["status"] == "completed", run
    assert "nothing was changed" in run["result"]["answer"]
    assert [n for n, _ in _tool_calls(run["id"])] == ["ask_confirm"]

    run = _ask(client, "I want to delete my account")
    run = answer_and_wait(client, run, {"action": "proceed"})
    assert "14-day grace period" in run["result"]["answer"]
    assert [n for n, _ in _tool_calls(run["id"])] == ["ask_confirm", "kb_search"]
