"""A card's post reads only the fields of the answer (issue 35 item 9, the server's side):
an edit that is not being sent (its row on Approve, or "Approve all") never blocks the
answer, whatever is in it; a batched card with the tools' schemas has generated fields,
an empty required one refused, only when its edit is sent."""

from __future__ import annotations

import pytest
from django.http import QueryDict

from hitl.cards import CardFormError, answer_from_post, card_context
from tests.pages.test_cards import fmt_card, fmt_post, render

APPROVE_BOTH = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
SCHEMAS = {"send_email": {"type": "object", "required": ["to", "body"],
                          "additionalProperties": False,
                          "properties": {"to": {"type": "string", "title": "To"},
                                         "body": {"type": "string", "title": "Body"}}}}


def test_unsent_edit_does_not_block():
    assert fmt_post("hitl_request", "decision.0=approve&decision.1=approve"
                    "&edited_json.0=%7Bbad") == ("resolved", APPROVE_BOTH)


def test_approve_all_approves_every_row():
    assert fmt_post("hitl_request", "all=approve&decision.0=edit&edited_json.0=%7Bbad"
                    "&decision.1=reject") == ("resolved", APPROVE_BOTH)


def test_stored_schema_gives_fields_and_required_text():
    card = fmt_card("hitl_request", args_schemas=SCHEMAS)
    html = render(card_context(card, preview=True, action_url="/a/"))
    assert 'name="edited.0.to"' in html and "edited_json.0" not in html
    assert html.count(" required") >= 2
    # Not sent: an emptied field is no problem.
    assert answer_from_post(card, QueryDict(
        "decision.0=approve&decision.1=approve&edited.0.to=&edited.0.body=")) == (
        "resolved", APPROVE_BOTH)
    with pytest.raises(CardFormError) as err:
        answer_from_post(card, QueryDict(
            "decision.0=edit&decision.1=approve&edited.0.to=&edited.0.body=hi"))
    assert err.value.fields == {"edited.0.to": ["To: fill this in"]}
