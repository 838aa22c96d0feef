"""The seven interaction kinds: each request class checks its answer and describes it."""

from __future__ import annotations

import jsonschema
import pytest

from hitl.formats.ours import KINDS
from hitl.kinds import InvalidAnswer, parse_request, response_schema, validate_response

OPTIONS = [{"label": "Red", "value": "red"}, {"label": "Green", "value": "green"}]
REQUESTS = {
    "input": {"type": "input", "message": "Name?", "placeholder": "Apollo"},
    "select": {"type": "select", "message": "Colour?", "options": OPTIONS},
    "multiSelect": {"type": "multiSelect", "message": "Some", "options": OPTIONS, "min": 1,
                    "max": 1},
    "modal": {"type": "modal", "title": "Sure?", "body": "Really", "actions": OPTIONS},
    "approval": {"type": "approval", "message": "Ship?"},
    "unlock": {"type": "unlock", "message": "Unlock", "key": "K-1"},
    "review": {"type": "review", "message": "Plan", "proposal": {"n": 1},
               "allowed": ["approve", "edit"],
               "editSchema": {"type": "object", "properties": {"n": {"type": "integer"}},
                              "required": ["n"]}},
}
GOOD = {"input": {"value": "x"}, "select": {"value": "red"}, "multiSelect": {"values": ["red"]},
        "modal": {"action": "green"}, "approval": {"approved": False, "reason": "no"},
        "unlock": {}, "review": {"decision": "edit", "edited": {"n": 2}}}
BAD = {  # kind → (answer, the field the error names)
    "input": ({"value": "  "}, "value"),
    "select": ({"value": "blue"}, "value"),
    "multiSelect": ({"values": ["red", "green"]}, "values"),
    "modal": ({"action": "maybe"}, "action"),
    "approval": ({"approved": "yes please"}, "approved"),
    "unlock": ({"key": "K-1"}, "key"),
    "review": ({"decision": "edit", "edited": {"n": "two"}}, "edited"),
}


def test_every_kind_is_covered():
    assert set(REQUESTS) == set(KINDS) == set(GOOD) == set(BAD)


@pytest.mark.parametrize("kind", KINDS)
def test_a_fitting_answer_passes_and_fits_the_schema(kind):
    clean = validate_response(REQUESTS[kind], GOOD[kind])
    assert clean == GOOD[kind]
    jsonschema.validate(clean, response_schema(REQUESTS[kind]))


@pytest.mark.parametrize("kind", KINDS)
def test_a_wrong_answer_names_its_field(kind):
    answer, field = BAD[kind]
    with pytest.raises(InvalidAnswer) as err:
        validate_response(REQUESTS[kind], answer)
    assert field in err.value.fields


def test_review_refuses_a_decision_that_is_not_allowed():
    with pytest.raises(InvalidAnswer) as err:
        validate_response(REQUESTS["review"], {"decision": "reject"})
    assert "not allowed" in err.value.fields["decision"][0]


def test_multi_select_bounds_are_in_the_schema():
    schema = response_schema(REQUESTS["multiSelect"])["properties"]["values"]
    assert (schema["minItems"], schema["maxItems"]) == (1, 1)
    assert schema["items"]["enum"] == ["red", "green"]


def test_a_payload_that_is_not_an_object_is_refused():
    with pytest.raises(InvalidAnswer) as err:
        validate_response(REQUESTS["input"], ["x"])
    assert err.value.fields == {"payload": ["expected an object"]}


def test_an_unknown_request_has_an_open_schema_and_refuses_answers():
    assert response_schema({"type": "poll"}) == {"type": "object"}
    with pytest.raises(InvalidAnswer):
        validate_response({"type": "poll"}, {})


def test_requests_keep_their_extra_keys():
    parsed = parse_request({**REQUESTS["approval"], "expiresAt": "2030-01-01T00:00:00Z"})
    assert parsed.model_dump()["expiresAt"] == "2030-01-01T00:00:00Z"
