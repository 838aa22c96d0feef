"""Hostile form posts and URLs on the chat pages (issue 27 findings 3, 8), over the live
server with a logged-in session: a NUL, a lone surrogate's stand-in or an oversized field
is a 400 naming the field, and nothing is written (agentsite.form_guard, hitl.cards)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog, Conversation, Message
from runs.services import run_start
from tests.pages.test_access import wait_status
from tests.sessions import login, post_form

# An edit form from a schema: the card posts edited.title / edited.notes.
REVIEW = {"type": "review", "message": "Review the plan", "proposal": {"title": "Release"},
          "allowed": ["approve", "edit", "reject"],
          "editSchema": {"type": "object", "required": ["title"],
                         "properties": {"title": {"type": "string"},
                                        "notes": {"type": "string"}}}}
REQUESTS: dict[str, dict[str, Any]] = {
    "input": {"type": "input", "message": "Name the release", "placeholder": "v1"},
    "approval": {"type": "approval", "message": "Ship it?"},
    "review": REVIEW,
    # A review with no edit schema: the card's edit is a JSON editor (edited_json).
    "review_json": {**REVIEW, "editSchema": None},
}


@pytest.fixture
def owner_session(live, users) -> Iterator[httpx.Client]:
    client = login(live["base_url"], "owner")
    yield client
    client.close()


@pytest.fixture
def paused(users) -> tuple[AgentRun, dict[str, AgentInterrupt]]:
    """A paused run of the owner's with one pending card per REQUESTS entry, written as the
    worker writes them (nothing here needs the graph: every answer below is refused)."""
    from runs import registry

    owner = users["owner"]
    conversation = Conversation.objects.create(owner=owner, agent="showcase", title="t")
    Message.objects.create(conversation=conversation, role="user", content="hi")
    run = AgentRun.objects.create(owner=owner, conversation=conversation, agent="showcase",
                                  agent_version=registry.get("showcase").version,
                                  thread_id=str(conversation.id),
                                  status=AgentRun.Status.PAUSED, segments=1)
    cards = {}
    for name, request in REQUESTS.items():
        kind = request["type"]
        cards[name] = AgentInterrupt.objects.create(run=run, interrupt_id=f"guard-{name}",
                                                    kind=kind, request=request)
    return run, cards


def assert_nothing_decided(run: AgentRun) -> None:
    assert set(run.interrupts.values_list("status", flat=True)) == {"pending"}
    assert not run.interrupts.exclude(decision=None).exists()
    assert not AuditLog.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert run.status == "paused"


def answer_url(run: AgentRun, card: AgentInterrupt) -> str:
    return f"/c/{run.conversation_id}/answer/{card.interrupt_id}/"


@pytest.mark.parametrize(("card", "data", "field"), [
    ("input", {"value": "a\x00b"}, "value"),
    ("approval", {"decision": "reject", "reason": "no\x00way"}, "reason"),
    ("review", {"decision": "edit", "edited.title": "T\x00"}, "edited.title"),
    ("input", {"value": "ok", "va\x00lue": "x"}, "va\\u0000lue"),
])
def test_nul_in_a_card_answer_is_a_400_naming_the_field(owner_session, paused, card, data,
                                                        field):
    run, cards = paused
    for htmx in (False, True):
        headers = {"HX-Request": "true"} if htmx else {}
        r = post_form(owner_session, answer_url(run, cards[card]), data, headers=headers)
        assert r.status_code == 400, r.text[:300]
        assert f'<code class="refused-field">{field}</code>' in r.text
        assert "NUL character" in r.text
    assert_nothing_decided(run)


def test_json_in_a_card_answer_is_checked_as_the_api_checks_it(owner_session, paused):
    run, cards = paused
    url = answer_url(run, cards["review_json"])
    # "\u0000" is six plain characters in the form: only the parsed answer holds a NUL.
    r = post_form(owner_session, url, {"decision": "edit", "edited_json": '{"t": "\\u0000"}'})
    assert r.status_code == 400 and "NUL character" in r.text, r.text[:300]
    assert "edited.t" in r.text
    r = post_form(owner_session, url, {"decision": "edit", "edited_json": '{"t": NaN}'})
    assert r.status_code == 400 and "not a finite number" in r.text, r.text[:300]
    r = post_form(owner_session, url, {"decision": "edit", "edited_json": "[" * 100_000})
    assert r.status_code == 400 and "nested deeper" in r.text, r.text[:300]
    assert_nothing_decided(run)


def test_nul_in_the_url_is_a_400_naming_it(owner_session, paused):
    run, _ = paused
    r = post_form(owner_session, f"/c/{run.conversation_id}/answer/a%00b/", {"value": "x"})
    assert r.status_code == 400, r.text[:300]
    assert '<code class="refused-field">interrupt_id</code>' in r.text
    r = owner_session.get(f"/c/{run.conversation_id}/?x=%00")
    assert r.status_code == 400 and '<code class="refused-field">x</code>' in r.text
    assert_nothing_decided(run)


def test_an_answer_over_answer_max_bytes_is_refused(owner_session, paused):
    run, cards = paused
    limit = settings.ANSWER_MAX_BYTES
    # One field of 2 MB: refused before the view, naming it.
    r = post_form(owner_session, answer_url(run, cards["input"]), {"value": "x" * 2_000_000})
    assert r.status_code == 400, r.text[:300]
    assert '<code class="refused-field">value</code>' in r.text and f"at most {limit}" in r.text
    # Fields each under the limit, an answer over it: refused on the card (ANSWER_MAX_BYTES).
    half = "y" * (limit // 2 + 10)
    r = post_form(owner_session, answer_url(run, cards["review"]),
                  {"decision": "edit", "edited.title": half, "edited.notes": half})
    assert r.status_code == 400 and "ANSWER_MAX_BYTES" in r.text, r.text[:300]
    assert_nothing_decided(run)


def test_an_answer_field_may_be_larger_than_other_fields(owner_session, users):
    """Answers are held to ANSWER_MAX_BYTES, not to the other fields' FORM_FIELD_MAX_BYTES."""
    run = run_start(owner=users["owner"], agent="dev", input={}, message="hi")
    run = wait_status(run, "paused", "failed")
    assert run.status == "paused", (run.status, run.error)
    card = run.interrupts.get(status="pending")
    value = "z" * (settings.FORM_FIELD_MAX_BYTES + 10)
    r = post_form(owner_session, answer_url(run, card), {"value": value},
                  headers={"HX-Request": "true"})
    assert r.status_code == 200 and "Answered" in r.text, r.text[:300]
    card.refresh_from_db()
    assert card.decision == {"value": value}
    wait_status(run, "paused", "completed")


@pytest.mark.parametrize(("data", "field"), [
    ({"topic": "a\x00b", "message": "hi"}, "topic"),
    ({"topic": "ok", "message": "hi\x00"}, "message"),
    ({"topic": "ok", "message": "m" * (settings.FORM_FIELD_MAX_BYTES + 1)}, "message"),
])
def test_new_chat_refuses_a_bad_field_and_starts_nothing(owner_session, data, field):
    r = post_form(owner_session, "/new/dev/", data)
    assert r.status_code == 400, r.text[:300]
    assert f'<code class="refused-field">{field}</code>' in r.text
    assert not Conversation.objects.exists() and not AgentRun.objects.exists()


def test_send_refuses_nul_and_starts_nothing(owner_session, paused):
    run, _ = paused
    r = post_form(owner_session, f"/c/{run.conversation_id}/send/", {"message": "go\x00"})
    assert r.status_code == 400 and '<code class="refused-field">message</code>' in r.text
    assert AgentRun.objects.count() == 1
    assert Message.objects.filter(conversation_id=run.conversation_id).count() == 1


def test_a_refused_htmx_card_post_is_put_into_its_card(owner_session, paused):
    """htmx sends the card's id (HX-Target): the refusal alone goes into the card's
    ``-refused`` slot (HX-Retarget / HX-Reswap), which base.html lets htmx swap (a 400)."""
    run, cards = paused
    r = post_form(owner_session, answer_url(run, cards["input"]), {"value": "a\x00b"},
                  headers={"HX-Request": "true", "HX-Target": "card-guard-input"})
    assert r.status_code == 400
    assert r.headers["HX-Retarget"] == "#card-guard-input-refused"
    assert r.headers["HX-Reswap"] == "innerHTML"
    assert r.text.strip().startswith('<ul class="errors card__errors" role="alert"')
    assert '<code class="refused-field">value</code>' in r.text and "<html" not in r.text
    # A target that is not a card's id is not echoed into a selector: the 400 page.
    r = post_form(owner_session, answer_url(run, cards["input"]), {"value": "a\x00b"},
                  headers={"HX-Request": "true", "HX-Target": "x, body"})
    assert r.status_code == 400 and "HX-Retarget" not in r.headers and "<html" in r.text
    page = owner_session.get(f"/c/{run.conversation_id}/").text
    assert 'id="card-guard-input-refused"' in page
    assert '{"code": "400", "swap": true, "error": true}' in page.replace("&quot;", '"')
    assert_nothing_decided(run)
