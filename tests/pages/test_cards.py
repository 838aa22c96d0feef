"""hitl.cards: card context, rendering and form posts, without a database."""

from __future__ import annotations

import uuid

import pytest
from django.http import QueryDict
from django.template.loader import render_to_string
from django.utils import timezone

from hitl import schema_form
from hitl.cards import CardFormError, answer_from_post, card_context
from hitl.models import AgentInterrupt

PLAN_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "steps": {"type": "array", "items": {"type": "string"}},
        "budget": {"type": "number"},
        "people": {"type": "integer"},
        "urgent": {"type": "boolean"},
        "size": {"type": "string", "enum": ["s", "m", "l"]},
        "meta": {"type": "object"},
    },
    "required": ["title", "steps"],
}

REQUESTS = {
    "input": {"type": "input", "message": "Name it", "placeholder": "e.g. Apollo"},
    "select": {"type": "select", "message": "Pick", "options": [
        {"label": "Red", "value": "red"}, {"label": "Blue", "value": "blue"}]},
    "multiSelect": {"type": "multiSelect", "message": "Extras", "min": 1, "max": 2, "options": [
        {"label": "Logs", "value": "logs"}, {"label": "Metrics", "value": "metrics"},
        {"label": "Alerts", "value": "alerts"}]},
    "modal": {"type": "modal", "title": "Heads up", "body": "Notes are missing.",
              "actions": [{"label": "Continue", "value": "continue"}]},
    "approval": {"type": "approval", "message": "Ship it?", "details": {"name": "x"}},
    "unlock": {"type": "unlock", "message": "Unlock", "key": "signing-key"},
    "review": {"type": "review", "message": "Review the plan",
               "proposal": {"title": "Release", "steps": ["build", "ship"]},
               "allowed": ["approve", "edit", "reject"], "editSchema": PLAN_SCHEMA},
}


def make(kind: str, **kw) -> AgentInterrupt:
    return AgentInterrupt(run_id=uuid.uuid4(), interrupt_id=f"int-{kind}", kind=kind,
                          request=REQUESTS[kind], created_at=timezone.now(), **kw)


def render(card: dict) -> str:
    return render_to_string("hitl/cards/card.html", {"card": card})


@pytest.mark.parametrize("kind", list(REQUESTS))
def test_every_kind_renders_one_form_with_labelled_inputs(kind):
    html = render(card_context(make(kind), preview=True, action_url="/answer/"))
    assert html.count("<form ") == 1
    assert 'data-interrupt-id="int-' + kind + '"' in html
    assert 'action="/answer/"' in html
    assert "<script" not in html and " onclick" not in html and "style=" not in html


def test_input_card_shows_placeholder_and_errors_next_to_field():
    card = card_context(make("input"), preview=True, action_url="/a/",
                        errors={"value": ["must not be empty"]})
    html = render(card)
    assert 'placeholder="e.g. Apollo"' in html
    assert "must not be empty" in html and 'aria-invalid="true"' in html


def test_multiselect_carries_limits_and_keeps_checked_values():
    data = QueryDict("values=logs&values=alerts")
    html = render(card_context(make("multiSelect"), preview=True, action_url="/a/", values=data))
    assert 'data-min="1"' in html and 'data-max="2"' in html
    assert html.count("checked") == 2


def test_modal_is_a_dialog_with_its_actions():
    html = render(card_context(make("modal"), preview=True, action_url="/a/"))
    assert "<dialog open" in html and "Heads up" in html
    assert 'name="action" value="continue"' in html


def test_review_offers_only_allowed_actions_and_generates_edit_fields():
    html = render(card_context(make("review"), preview=True, action_url="/a/"))
    assert 'value="approve"' in html and 'value="edit"' in html and 'value="reject"' in html
    assert 'value="respond"' not in html
    assert 'name="edited.title" value="Release"' in html
    assert ">build\nship</textarea>" in html
    assert 'type="number"' in html and "<select" in html and "data-json-editor" in html


def test_edit_form_kinds():
    fields = schema_form.fields(PLAN_SCHEMA, name="edited", dom_id="c")
    kinds = {f["name"]: f["kind"] for f in fields}
    assert kinds == {"title": "string", "steps": "string_list", "budget": "number",
                     "people": "integer", "urgent": "boolean", "size": "enum", "meta": "json"}
    assert schema_form.fields({"type": "array"}, name="x", dom_id="c") is None


def test_edit_form_follows_the_schemas_order_after_jsonb():
    # Postgres jsonb returns keys shortest first ("steps" before "title"): the required
    # list, which keeps its order, puts the fields back as written.
    stored = {"type": "object", "required": ["title", "steps"],
              "properties": {"steps": {"type": "array", "items": {"type": "string"}},
                             "title": {"type": "string"}, "owner": {"type": "string"}}}
    names = [f["name"] for f in schema_form.fields(stored, name="e", dom_id="c")]
    assert names == ["title", "steps", "owner"]
    stored["x-order"] = ["owner", "title"]
    names = [f["name"] for f in schema_form.fields(stored, name="e", dom_id="c")]
    assert names == ["owner", "title", "steps"]


def test_review_edit_errors_are_plain_words_per_field():
    request = {**REQUESTS["review"], "editSchema": {**PLAN_SCHEMA, "properties": {
        **PLAN_SCHEMA["properties"], "steps": {"type": "array", "minItems": 1,
                                               "items": {"type": "string"}}}}}
    with pytest.raises(CardFormError) as err:
        answer_from_post(request, QueryDict("decision=edit&edited.title=&edited.steps="))
    assert err.value.fields == {"edited.steps": ["Steps: add at least one step"],
                                "edited.title": ["Title: fill this in"]}
    interrupt = make("review")
    interrupt.request = request
    html = render(card_context(interrupt, preview=True, action_url="/a/",
                               errors=err.value.fields,
                               values=QueryDict("decision=edit&edited.title=&edited.steps=")))
    # The first field in error gets the focus back, and its error is tied to it.
    assert html.count(" autofocus") == 1
    title = html[html.index('id="card-int-review-edit-title"'):]
    title = title[:title.index(">")]
    assert "autofocus" in title and 'aria-invalid="true"' in title
    assert 'aria-describedby=" card-int-review-edit-title-errors"' in title \
        or 'aria-describedby="card-int-review-edit-title-errors"' in title
    assert 'id="card-int-review-edit-title-errors"' in html


@pytest.mark.parametrize("kind,field,body", [
    ("input", "value", "value="), ("select", "value", ""), ("modal", "action", ""),
    ("approval", "decision", "decision=maybe"),
])
def test_refused_answer_focuses_the_field_and_ties_the_error(kind, field, body):
    errors = {field: ["choose"]}
    html = render(card_context(make(kind), preview=True, action_url="/a/", errors=errors,
                               values=QueryDict(body)))
    assert html.count(" autofocus") == 1
    focused = html[:html.index(" autofocus")]
    focused = focused[focused.rindex("<"):]
    assert "-errors" in focused and "aria-describedby" in focused


def test_error_not_tied_to_a_field_is_focused_as_the_cards_alert():
    html = render(card_context(make("input"), preview=True, action_url="/a/",
                               errors={"__all__": ["Already answered by bob."]}))
    assert 'role="alert" id="card-int-input-errors" tabindex="-1" autofocus' in html


def test_modal_shows_its_title_once():
    interrupt = make("modal")
    interrupt.request = {**REQUESTS["modal"], "message": "Heads up"}
    html = render(card_context(interrupt, preview=True, action_url="/a/"))
    assert html.count("Heads up") == 1
    assert 'aria-labelledby="card-int-modal-title" data-modal' in html


def test_answered_card_of_a_run_that_failed_says_who_answered():
    # interrupts_close_decided: the run ended before applying it: cancelled, decision kept.
    from django.contrib.auth.models import User

    interrupt = make("select", status="cancelled", decision={"value": "blue"},
                     decided_at=timezone.now(), decided_by=User(username="bob"))
    html = render(card_context(interrupt, preview=True, action_url="/a/"))
    assert "Answered by <strong class=\"card__decider\">bob</strong>" in html
    assert "Blue" in html and "Cancelled" not in html


def test_text_is_escaped():
    interrupt = make("input")
    interrupt.request = {**REQUESTS["input"], "message": "<img src=x onerror=alert(1)>"}
    html = render(card_context(interrupt, preview=True, action_url="/a/"))
    assert "<img" not in html and "&lt;img" in html


def test_answered_card_is_read_only_and_says_what():
    interrupt = make("select", status="decided", decision={"value": "blue"},
                     decided_at=timezone.now())
    html = render(card_context(interrupt, preview=True, action_url="/a/"))
    assert "<form" not in html and "Blue" in html and "Answered by" in html


def test_not_answerable_when_can_answer_is_false():
    html = render(card_context(make("approval"), preview=True, action_url="/a/", can_answer=False))
    assert "<form" not in html and "read-only" in html.lower()


def test_expired_card():
    html = render(card_context(make("input", status="expired"), preview=True, action_url="/a/"))
    assert "Expired" in html and "<form" not in html


def post(kind: str, body: str):
    return answer_from_post(REQUESTS[kind], QueryDict(body))


def test_answer_from_post_per_kind():
    assert post("input", "value=Apollo") == ("resolved", {"value": "Apollo"})
    assert post("select", "value=red") == ("resolved", {"value": "red"})
    assert post("multiSelect", "values=logs&values=alerts") == (
        "resolved", {"values": ["logs", "alerts"]})
    assert post("modal", "action=continue") == ("resolved", {"action": "continue"})
    assert post("approval", "decision=approve&reason=") == ("resolved", {"approved": True})
    assert post("approval", "decision=reject&reason=too+late") == (
        "resolved", {"approved": False, "reason": "too late"})
    assert post("unlock", "decision=unlock") == ("resolved", {})
    assert post("review", "decision=approve") == ("resolved", {"decision": "approve"})
    assert post("input", "_status=cancelled") == ("cancelled", None)


def test_review_edit_from_generated_fields():
    status, payload = post("review", "decision=edit&edited.title=New&edited.steps=a%0D%0Ab%0A"
                                     "&edited.budget=2.5&edited.people=3&edited.urgent=on"
                                     "&edited.size=m&edited.meta=%7B%22k%22%3A1%7D")
    assert payload["edited"] == {"title": "New", "steps": ["a", "b"], "budget": 2.5,
                                 "people": 3, "urgent": True, "size": "m", "meta": {"k": 1}}


def test_review_edit_form_errors():
    with pytest.raises(CardFormError) as err:
        post("review", "decision=edit&edited.title=x&edited.steps=a&edited.people=two"
                       "&edited.meta=%7Bnot")
    assert set(err.value.fields) == {"edited.people", "edited.meta"}


def test_review_json_editor_without_schema():
    request = {**REQUESTS["review"], "editSchema": None}
    assert answer_from_post(request, QueryDict("decision=edit&edited_json=%7B%22a%22%3A1%7D")) \
        == ("resolved", {"decision": "edit", "edited": {"a": 1}})
    with pytest.raises(CardFormError) as err:
        answer_from_post(request, QueryDict("decision=edit&edited_json=nope"))
    assert "edited_json" in err.value.fields


def test_select_without_choice_is_a_form_error():
    with pytest.raises(CardFormError):
        post("select", "")
