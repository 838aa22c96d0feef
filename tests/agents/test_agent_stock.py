"""The stock agent (first seed's tushare graph): resolve a company, asking when needed."""

from __future__ import annotations

import pytest

from runs.models import Message
from tests.helpers import answer, answer_and_wait, pending, start_run, wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def _start(client, **body) -> dict:
    run = start_run(client, "stock", **body)
    return wait_run(client, run["id"], {"paused", "completed", "blocked", "failed"})


def test_one_match_answers_from_the_shipped_data(api):
    client = api("owner")
    run = _start(client, message="How did 600519 do today?")
    assert run["status"] == "completed", run
    assert run["result"]["stock"]["name"] == "Kweichow Moutai"
    text = Message.objects.get(pk=run["assistant_message_id"]).content
    assert "Kweichow Moutai (600519.SH, Liquor) closed at 1688.0 on 2026-11-27" in text
    assert run["pending_interrupts"] == []


def test_no_name_asks_input_then_resolves(api):
    client = api("owner")
    run = _start(client)
    question = pending(run)
    assert question["kind"] == "input"
    assert question["request"]["message"] == "Which company or stock code do you mean?"
    run = answer_and_wait(client, run, {"value": "catl"})
    assert run["status"] == "completed", run
    assert run["result"]["stock"]["ts_code"] == "300750.SZ"


def test_several_matches_ask_choice(api):
    client = api("owner")
    run = _start(client, input={"query": "liquor stocks"})
    question = pending(run)
    assert question["kind"] == "select"
    options = [o["value"] for o in question["request"]["options"]]
    assert options == ["Kweichow Moutai (600519.SH)", "Wuliangye Yibin (000858.SZ)"]
    bad = answer(client, run, {"value": "BYD Company (002594.SZ)"})
    assert bad.status_code == 400  # not one of the offered options
    run = answer_and_wait(client, run, {"value": options[1]})
    assert run["status"] == "completed", run
    assert run["result"]["stock"]["name"] == "Wuliangye Yibin"
    assert "down 0.35%" in run["result"]["answer"]


def test_unknown_name_asks_again_then_choice(api):
    client = api("owner")
    run = _start(client, message="tell me about acme widgets")
    assert pending(run)["kind"] == "input"
    assert "acme widgets" in pending(run)["request"]["message"]
    run = answer_and_wait(client, run, {"value": "a bank"})
    assert pending(run)["kind"] == "select"
    assert len(pending(run)["request"]["options"]) == 4
    run = answer_and_wait(client, run, {"value": "China Merchants Bank (600036.SH)"})
    assert run["status"] == "completed"
    assert run["result"]["stock"]["ts_code"] == "600036.SH"
