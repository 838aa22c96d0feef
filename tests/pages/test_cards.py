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
        post("review", "decision=edit&edited.title=&edited.steps=", request)
    assert err.value.fields == {"edited.steps": ["Steps: add at least one step"],
                                "edited.title": ["Title: fill this in"]}
    interrupt = make("review")
    interrupt.request = request
    html = render(card_context(interrupt, preview=True, action_url="/a/",
                               errors=err.value.fields,
                               values=QueryDict("decision=edit&edited.title=&edited.steps=")))
    # The first field in error gets the focus back, and its error is tied to it.
    assert html.count(" autofocus") == 1
    title = html[html.index('id="card-int-review-edited-title"'):]
    title = title[:title.index(">")]
    assert "autofocus" in title and 'aria-invalid="true"' in title
    assert 'aria-describedby=" card-int-review-edited-title-errors"' in title \
        or 'aria-describedby="card-int-review-edited-title-errors"' in title
    assert 'id="card-int-review-edited-title-errors"' in html


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


def post(kind: str, body: str, request: dict | None = None):
    interrupt = make(kind)
    if request is not None:
        interrupt.request = request
    return answer_from_post(interrupt, QueryDict(body))


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
    assert post("review", "decision=edit&edited_json=%7B%22a%22%3A1%7D", request) \
        == ("resolved", {"decision": "edit", "edited": {"a": 1}})
    with pytest.raises(CardFormError) as err:
        post("review", "decision=edit&edited_json=nope", request)
    assert "edited_json" in err.value.fields


def test_select_without_choice_is_a_form_error():
    with pytest.raises(CardFormError):
        post("select", "")


# --- every other format's card (hitl.formats) ---------------------------------------------------

BATCHED = {"action_requests": [
    {"name": "send_email", "args": {"to": "alice@example.com", "body": "hi"},
     "description": "Tool execution requires approval"},
    {"name": "delete_file", "args": {"path": "/tmp/report"},
     "description": "Deleting a file cannot be undone"}],
    "review_configs": [
        {"action_name": "send_email", "allowed_decisions": ["approve", "edit", "reject",
                                                            "respond"]},
        {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]}]}
PER_CALL = {"type": "tool_approval", "name": "delete_file", "args": {"path": "/tmp/x"},
            "description": "Deleting a file cannot be undone", "tool_call_id": "call_1"}
INBOX = [{"action_request": {"action": "publish_post", "args": {"title": "Hello"}},
          "config": {"allow_ignore": True, "allow_respond": True, "allow_edit": True,
                     "allow_accept": True}, "description": "Publish the post?"}]
TRIP = {"type": "object", "title": "Trip", "required": ["destination", "nights"],
        "properties": {"nights": {"type": "integer", "title": "Nights"},
                       "smoking": {"type": "boolean", "default": False, "title": "Smoking"},
                       "destination": {"type": "string", "title": "Destination",
                                       "description": "a city"}}}
FORMATS = {
    "hitl_request": (BATCHED, None),
    "tool_approval": (PER_CALL, None),
    "agent_inbox": (INBOX, None),
    "schema_form": ({"question": "Where to?"}, TRIP),
    "generic": ({"question": "Pick a colour", "options": ["red", "green", "blue"]}, None),
}


def fmt_card(name: str, **kw) -> AgentInterrupt:
    value, schema = FORMATS[name]
    return AgentInterrupt(run_id=uuid.uuid4(), interrupt_id=f"int-{name}", kind=name,
                          request=value, response_schema=schema, created_at=timezone.now(),
                          **kw)


def fmt_post(name: str, body: str):
    return answer_from_post(fmt_card(name), QueryDict(body))


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_renders_one_labelled_form_without_script(name):
    html = render(card_context(fmt_card(name), preview=True, action_url="/a/"))
    assert html.count("<form ") == 1 and f'data-kind="{name}"' in html
    assert "<script" not in html and " onclick" not in html and "style=" not in html
    # Every input has a label (by for= / id) or sits inside one.
    import re

    for match in re.finditer(r'<(input|textarea|select)\b[^>]*>', html):
        tag = match.group(0)
        if 'type="hidden"' in tag:
            continue
        ident = re.search(r'id="([^"]+)"', tag).group(1)
        assert f'for="{ident}"' in html, tag


def test_batched_tool_calls_one_row_each_with_only_the_allowed_decisions():
    html = render(card_context(fmt_card("hitl_request"), preview=True, action_url="/a/"))
    assert html.count('class="tool-row"') == 2
    rows = html.split('class="tool-row"')
    assert 'value="respond"' in rows[1] and 'value="edit"' in rows[1]
    assert 'value="respond"' not in rows[2] and 'value="edit"' not in rows[2]
    assert "alice@example.com" in rows[1] and "Deleting a file cannot be undone" in rows[2]
    assert 'name="all" value="approve"' in html
    assert fmt_post("hitl_request", "all=approve") == (
        "resolved", {"decisions": [{"type": "approve"}, {"type": "approve"}]})
    body = ("decision.0=edit&edited_json.0=%7B%22to%22%3A%22bob%40example.com%22%2C%22body%22"
            "%3A%22hey%22%7D&decision.1=reject&message.1=keep+it")
    assert fmt_post("hitl_request", body) == ("resolved", {"decisions": [
        {"type": "edit", "edited_action": {"name": "send_email",
                                           "args": {"to": "bob@example.com", "body": "hey"}}},
        {"type": "reject", "message": "keep it"}]})
    with pytest.raises(CardFormError) as err:
        fmt_post("hitl_request", "decision.0=respond&decision.1=edit")
    assert set(err.value.fields) == {"message.0", "decision.1"}


def test_batched_errors_sit_beside_their_row_and_take_the_focus():
    errors = {"message.0": ["send_email: write the response"]}
    html = render(card_context(fmt_card("hitl_request"), preview=True, action_url="/a/",
                               errors=errors, values=QueryDict("decision.0=respond")))
    assert html.count(" autofocus") == 1
    tag = html[html.rindex("<", 0, html.index(" autofocus")):]
    assert tag.startswith("<textarea") and 'name="message.0"' in tag
    assert 'aria-describedby="' in tag and "-message-0-errors" in tag
    # validate()'s own names land on the row too.
    html = render(card_context(fmt_card("hitl_request"), preview=True, action_url="/a/",
                               errors={"decisions.1.type": ["'edit' is not allowed"]}))
    assert "is not allowed" in html.split('class="tool-row"')[2]


def test_per_call_and_inbox_cards():
    assert fmt_post("tool_approval", "decision=approve") == ("resolved", {"type": "approve"})
    assert fmt_post("tool_approval", "decision=reject&message=no") == (
        "resolved", {"type": "reject", "message": "no"})
    assert fmt_post("agent_inbox", "decision=accept") == (
        "resolved", [{"type": "accept", "args": None}])
    assert fmt_post("agent_inbox", "decision=response&message=later") == (
        "resolved", [{"type": "response", "args": "later"}])
    assert fmt_post("agent_inbox", "decision=edit&edited_json=%7B%22title%22%3A%22Hi%22%7D") == (
        "resolved", [{"type": "edit", "args": {"action": "publish_post",
                                               "args": {"title": "Hi"}}}])
    html = render(card_context(fmt_card("agent_inbox"), preview=True, action_url="/a/"))
    for choice in ("accept", "edit", "response", "ignore"):
        assert f'value="{choice}"' in html


def test_schema_form_card_is_generated_from_the_schema():
    html = render(card_context(fmt_card("schema_form"), preview=True, action_url="/a/"))
    assert html.index("Destination") < html.index("Nights") < html.index("Smoking")
    assert 'type="number"' in html and 'type="checkbox"' in html and "a city" in html
    assert fmt_post("schema_form", "answer.destination=Lisbon&answer.nights=3") == (
        "resolved", {"destination": "Lisbon", "nights": 3, "smoking": False})
    with pytest.raises(CardFormError) as err:
        fmt_post("schema_form", "answer.destination=&answer.nights=two")
    # An empty required text is missing (issue 35 item 12), not "".
    assert err.value.fields == {"answer.nights": ["Nights: enter a whole number"],
                                "answer.destination": ["Destination: fill this in"]}


def test_generic_card_answers_text_json_or_an_offered_option():
    html = render(card_context(fmt_card("generic"), preview=True, action_url="/a/"))
    assert 'name="option" value="1"' in html and ">green</button>" in html
    assert fmt_post("generic", "option=1") == ("resolved", "green")
    assert fmt_post("generic", "answer=Apollo&answer_mode=text") == ("resolved", "Apollo")
    assert fmt_post("generic", "answer=%5B1%2C2%5D&answer_mode=json") == ("resolved", [1, 2])
    with pytest.raises(CardFormError):
        fmt_post("generic", "answer=%5B1&answer_mode=json")
    interrupt = fmt_card("generic")
    interrupt.request = {"a": [1, None], "b": "x" * 50}
    html = render(card_context(interrupt, preview=True, action_url="/a/"))
    assert "<pre" in html and "&quot;a&quot;" in html


@pytest.mark.parametrize("value", [None, 42.5, [[1, [2, [3, {"a": [None]}]]]], "x" * 5000,
                                   {"type": "poll", "choices": [1, 2]},
                                   {"type": "select", "message": "no options"}, True, ""])
def test_odd_values_render(value):
    from hitl.formats import recognise

    fmt = recognise(value)
    interrupt = AgentInterrupt(run_id=uuid.uuid4(), interrupt_id="odd", kind=fmt.name,
                               request=value, created_at=timezone.now())
    html = render(card_context(interrupt, preview=True, action_url="/a/"))
    assert html.count("<form ") == 1


def test_schema_form_from_a_pydantic_model_with_refs_optionals_and_enum_lists():
    from enum import StrEnum
    from typing import Literal

    from pydantic import BaseModel, Field

    class Size(StrEnum):
        s = "s"
        m = "m"

    class Order(BaseModel):
        size: Size = Field(description="how big")
        extras: list[Literal["milk", "sugar"]] = []
        note: str | None = None
        count: int = Field(ge=1)

    schema = Order.model_json_schema()
    fields = {f["name"]: f for f in schema_form.fields(schema, name="answer", dom_id="c")}
    assert fields["size"]["kind"] == "enum" and fields["size"]["help"] == "how big"
    assert fields["extras"]["kind"] == "enum_list"
    assert fields["extras"]["choices"] == ["milk", "sugar"]
    assert fields["note"]["kind"] == "string" and not fields["note"]["required"]
    data = QueryDict("answer.size=m&answer.extras=milk&answer.extras=sugar&answer.count=0")
    value = schema_form.value_from_post(schema, data, name="answer")
    assert value == {"size": "m", "extras": ["milk", "sugar"], "count": 0}
    assert schema_form.plain_errors(schema, value, name="answer") == {
        "answer.count": ["Count: enter at least 1"]}


def test_review_proposal_is_shown_in_the_schemas_order():
    interrupt = make("review")
    interrupt.request = {**REQUESTS["review"], "proposal": {"steps": ["a"], "title": "T"}}
    html = render(card_context(interrupt, preview=True, action_url="/a/"))
    proposal = html[html.index("card__proposal"):html.index("</dl>")]
    assert proposal.index("Title") < proposal.index("Steps")
