"""The card's Cancel button on the chat page (issue 35, item 22), over the live server: it
cancels one question as its format says (a decline the agent gets, or, for a question
with no decline, the run), audited as the person's, for the owner and a reviewer; an
outsider and an anonymous visitor change nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from hitl.models import AgentInterrupt
from runs import registry
from runs.models import AgentRun, AuditLog, Conversation, Message
from tests.sessions import login, post_form

CANCEL = {"_status": "cancelled"}


@pytest.fixture
def paused(users) -> AgentRun:
    """A paused showcase run of the owner's: a question with a decline (ours: input) and
    one without (a bare string: generic), as the worker writes them."""
    owner = users["owner"]
    conversation = Conversation.objects.create(owner=owner, agent="showcase", title="t")
    Message.objects.create(conversation=conversation, role="user", content="hi")
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent="showcase",
                                  agent_version=registry.get("showcase").version,
                                  thread_id=str(conversation.id),
                                  status=AgentRun.Status.PAUSED, segments=1)
    AgentInterrupt.objects.create(run=run, interrupt_id="cancel-input", kind="input",
                                  request={"type": "input", "message": "Name the release"})
    AgentInterrupt.objects.create(run=run, interrupt_id="cancel-generic", kind="generic",
                                  request="Which bucket should I use?")
    return run


@pytest.fixture
def session(live) -> Iterator:
    clients: list[httpx.Client] = []

    def make(name: str | None) -> httpx.Client:
        client = login(live["base_url"], name) if name else httpx.Client(
            base_url=live["base_url"], timeout=60)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def url(run: AgentRun, interrupt_id: str) -> str:
    return f"/c/{run.conversation_id}/answer/{interrupt_id}/"


def row(run: AgentRun, interrupt_id: str) -> AgentInterrupt:
    return AgentInterrupt.objects.get(run=run, interrupt_id=interrupt_id)


def test_each_card_has_a_cancel_button_that_says_what_it_does(session, paused):
    page = session("owner").get(f"/c/{paused.conversation_id}/").text
    cards = dict(re.findall(r'data-interrupt-id="(cancel-\w+)"(.*?)</section>', page, re.S))
    assert re.search(r'name="_status" value="cancelled" formnovalidate', cards["cancel-input"])
    assert "Cancel this question" in cards["cancel-input"]
    assert "Cancel the run" in cards["cancel-generic"]
    assert "cancelling it cancels the whole run" in cards["cancel-generic"]


@pytest.mark.parametrize("who", ["owner", "reviewer"])
def test_cancel_declines_one_question_audited(session, paused, users, who):
    client = session(who)
    client.get(f"/c/{paused.conversation_id}/")  # the CSRF cookie
    for htmx in (True, False):
        headers = {"HX-Request": "true"} if htmx else {}
        r = post_form(client, url(paused, "cancel-input"), CANCEL, headers=headers)
        if htmx:  # the card, answered in place, says so
            assert r.status_code == 200 and 'data-status="cancelled"' in r.text, r.text[:300]
            assert f"Cancelled</strong> by {who}" in r.text
        else:  # already cancelled: the page says so, nothing more recorded
            assert r.status_code == 409 and "already answered" in r.text
    item = row(paused, "cancel-input")
    assert item.status == "cancelled" and item.decision is None
    assert item.decided_by == users[who]
    audit = AuditLog.objects.get(run=paused, action=AuditLog.Action.DECISION)
    assert (audit.interrupt_ref, audit.to_status, audit.actor, audit.surface) == (
        "cancel-input", "cancelled", users[who], "page")
    paused.refresh_from_db()
    assert paused.status == "paused"  # the other question is still open
    assert row(paused, "cancel-generic").status == "pending"


@pytest.mark.parametrize("who", ["owner", "reviewer"])
def test_cancel_of_a_question_with_no_decline_cancels_the_run(session, paused, users, who):
    client = session(who)
    client.get(f"/c/{paused.conversation_id}/")
    r = post_form(client, url(paused, "cancel-generic"), CANCEL)
    assert r.status_code == 302, r.text[:300]
    paused.refresh_from_db()
    assert paused.status == "cancelled"
    assert {i.status for i in paused.interrupts.all()} == {"cancelled"}
    end = AuditLog.objects.get(run=paused, action=AuditLog.Action.RUN_STATUS)
    assert (end.to_status, end.actor, end.surface) == ("cancelled", users[who], "page")
    assert end.payload == {"code": "question_cancelled", "interrupt_ids": ["cancel-generic"]}


@pytest.mark.parametrize("who", ["outsider", None])
def test_outsiders_and_anonymous_visitors_cancel_nothing(session, paused, who):
    client = session(who)
    client.get("/accounts/login/")  # a CSRF cookie for the anonymous visitor
    for interrupt_id in ("cancel-input", "cancel-generic"):
        r = post_form(client, url(paused, interrupt_id), CANCEL)
        if who:
            assert r.status_code == 404
        else:
            assert r.status_code == 302 and "/accounts/login/" in r.headers["location"]
    paused.refresh_from_db()
    assert paused.status == "paused"
    assert {i.status for i in paused.interrupts.all()} == {"pending"}
    assert not AuditLog.objects.filter(run=paused).exists()
