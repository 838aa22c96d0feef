"""hitl.formats: recognition, validation (clear field messages), the exact resume value,
summaries, and odd values (never an exception)."""

from __future__ import annotations

from typing import get_type_hints

import pytest
from langchain.agents.middleware import human_in_the_loop as lc
from langgraph.prebuilt import interrupt as inbox_types

from hitl import formats, kinds
from hitl.formats import InvalidAnswer, inbox, middleware, recognise

BATCH = {"action_requests": [{"name": "send_email", "args": {"to": "a"}, "description": "d"},
                             {"name": "delete_file", "args": {"path": "/x"}}],
         "review_configs": [{"action_name": "send_email",
                             "allowed_decisions": ["approve", "edit", "reject", "respond"],
                             "args_schema": {"type": "object", "properties": {
                                 "to": {"type": "string"}}, "required": ["to"]}},
                            {"action_name": "delete_file",
                             "allowed_decisions": ["approve", "reject"]}]}
PER_CALL = {"type": "tool_approval", "tool_call_id": "c1", "name": "delete_file",
            "args": {"path": "/x"}, "description": "Deleting cannot be undone"}
PER_CALL_SCHEMA = {"oneOf": [
    {"type": "object", "properties": {"type": {"const": "approve"}}, "required": ["type"]},
    {"type": "object", "properties": {"type": {"const": "reject"},
                                      "message": {"type": "string"}}, "required": ["type"]}]}
INBOX = [{"action_request": {"action": "publish", "args": {"t": 1}},
          "config": {"allow_ignore": True, "allow_respond": False, "allow_edit": True,
                     "allow_accept": True}, "description": "Publish?"}]
ODD = [None, 0, 42.5, True, "", "x" * 100_000, [], [[1, [2, [None]]]], {}, {"type": "poll"},
       {"type": "select", "message": "no options"}, {"type": None}, {"action_requests": 3},
       [{"action_request": "no"}], {"type": "tool_approval"}, [None], {"question": 5}]


def test_library_types_match_our_restatement():
    # Web processes may not import langchain.agents: the shapes are restated; keep them equal.
    for ours, theirs in [(middleware.HITLRequest, lc.HITLRequest),
                         (middleware.ActionRequest, lc.ActionRequest),
                         (middleware.ReviewConfig, lc.ReviewConfig),
                         (middleware.ToolApprovalRequest, lc.ToolApprovalRequest)]:
        assert set(get_type_hints(ours)) == set(get_type_hints(theirs)), ours
    assert set(middleware.DECISIONS) == set(lc.DecisionType.__args__)
    # Agent Inbox's types, deprecated in langgraph.prebuilt (their announced new home is
    # not in langchain 1.5): restated too.
    for ours, theirs in [(inbox.HumanInterrupt, inbox_types.HumanInterrupt),
                         (inbox.HumanResponse, inbox_types.HumanResponse),
                         (inbox.HumanInterruptConfig, inbox_types.HumanInterruptConfig)]:
        assert set(ours.__annotations__) == set(theirs.__annotations__)


@pytest.mark.parametrize("value, schema, name", [
    ({"type": "input", "message": "q"}, None, "input"),
    ({"type": "review", "message": "q", "proposal": {}}, None, "review"),
    (BATCH, None, "hitl_request"),
    (PER_CALL, PER_CALL_SCHEMA, "tool_approval"),
    (PER_CALL, None, "tool_approval"),
    (INBOX, None, "agent_inbox"),
    ({"question": "q"}, {"type": "object"}, "schema_form"),
    ("a string", {"type": "string"}, "schema_form"),
    ("a string", None, "generic"),
    ({"type": "poll"}, None, "generic"),
    ({"type": "select", "message": "no options"}, None, "generic"),
])
def test_recognition(value, schema, name):
    assert recognise(value, schema).name == name


def test_ours_are_unchanged_on_the_wire():
    request = {"type": "select", "message": "Pick", "options": [
        {"label": "A", "value": "a"}]}
    fmt = recognise(request)
    assert fmt.response_schema() == kinds.response_schema(request)
    assert fmt.resume_value(fmt.validate({"value": "a"})) == {"value": "a"}
    assert fmt.cancelled_value() == kinds.CANCELLED_RESUME
    with pytest.raises(InvalidAnswer) as err:
        fmt.validate({"value": "z"})
    assert "value" in err.value.fields
    assert fmt.summary({"value": "a"}) == "A" and fmt.message() == "Pick"


def test_hitl_request():
    fmt = recognise(BATCH)
    answer = {"decisions": [{"type": "edit", "edited_action": {"name": "send_email",
                                                               "args": {"to": "b"}}},
                            {"type": "reject", "message": "no"}]}
    assert fmt.resume_value(fmt.validate(answer)) == answer
    for bad, field in [
        ({"decisions": [{"type": "approve"}]}, "decisions"),
        ({"decisions": [{"type": "approve"}, {"type": "edit"}]}, "decisions.1.type"),
        ({"decisions": [{"type": "respond"}, {"type": "approve"}]}, "decisions.0.message"),
        ({"decisions": [{"type": "edit", "edited_action": {"name": "x", "args": {}}},
                        {"type": "approve"}]}, "decisions.0.edited_action.name"),
        ({"decisions": [{"type": "edit", "edited_action": {"name": "send_email",
                                                           "args": {"to": 5}}},
                        {"type": "approve"}]}, "decisions.0.edited_action.args.to"),
        ({"value": "x"}, "payload"), (None, "payload"), ("approve", "payload"),
    ]:
        with pytest.raises(InvalidAnswer) as err:
            fmt.validate(bad)
        assert field in err.value.fields, (bad, err.value.fields)
    assert fmt.approve_answer() == {"decisions": [{"type": "approve"}] * 2}
    assert fmt.cancelled_value()["decisions"][1] == {"type": "reject",
                                                     "message": "cancelled by user"}
    assert fmt.vote({"decisions": [{"type": "approve"}] * 2}).approved is True
    assert fmt.vote(answer) is None
    assert fmt.summary(answer) == "send_email: Approved with edits; delete_file: Rejected: no"
    assert [s.tool for s in fmt.subjects()] == ["send_email", "delete_file"]
    assert fmt.message() == "Approve 2 tool calls: send_email(to=a), delete_file(path=/x)"
    assert fmt.response_schema()["properties"]["decisions"]["minItems"] == 2


def test_tool_approval():
    fmt = recognise(PER_CALL, PER_CALL_SCHEMA)
    assert fmt.allowed() == ["approve", "reject"] and fmt.tool_call_id() == "c1"
    assert fmt.resume_value(fmt.validate({"type": "approve"})) == {"type": "approve"}
    with pytest.raises(InvalidAnswer) as err:
        fmt.validate({"type": "edit", "edited_action": {"name": "delete_file", "args": {}}})
    assert "type" in err.value.fields
    assert fmt.cancelled_value() == {"type": "reject", "message": "cancelled by user"}
    assert fmt.response_schema() == PER_CALL_SCHEMA
    # Approve only: no decline the middleware accepts, a cancel cancels the run.
    approve_only = recognise(PER_CALL, {"oneOf": [PER_CALL_SCHEMA["oneOf"][0]]})
    assert approve_only.allowed() == ["approve"]
    assert approve_only.cancelled_value() is formats.CANCELS_RUN
    assert fmt.message() == "Approve delete_file(path=/x): Deleting cannot be undone"


def test_agent_inbox():
    fmt = recognise(INBOX)
    assert fmt.allowed() == ["accept", "edit", "ignore"]
    edit = [{"type": "edit", "args": {"action": "publish", "args": {"t": 2}}}]
    assert fmt.resume_value(fmt.validate(edit)) == edit
    for bad, field in [([{"type": "response", "args": "x"}], "0.type"),
                       ([{"type": "accept", "args": "x"}], "0.args"),
                       ({"type": "accept"}, "payload"), ([], "payload")]:
        with pytest.raises(InvalidAnswer) as err:
            fmt.validate(bad)
        assert field in err.value.fields
    assert fmt.cancelled_value() == [{"type": "ignore", "args": None}]
    assert fmt.summary([{"type": "accept", "args": None}]) == "Accepted"


def test_schema_form_and_generic():
    fmt = recognise({"question": "Where?"}, {"type": "object", "properties": {
        "n": {"type": "integer"}}, "required": ["n"]})
    assert fmt.validate({"n": 2}) == {"n": 2} and fmt.message() == "Where?"
    with pytest.raises(InvalidAnswer) as err:
        fmt.validate({"n": "two"})
    assert err.value.fields == {"n": ["'two' is not of type 'integer'"]}
    generic = recognise("Which mission?")
    assert generic.resume_value(generic.validate("Apollo")) == "Apollo"
    assert generic.validate([1, {"a": None}]) == [1, {"a": None}]
    with pytest.raises(InvalidAnswer):
        generic.validate(None)
    # No decline either graph accepts (None is refused by a pydantic schema).
    assert fmt.cancelled_value() is generic.cancelled_value() is formats.CANCELS_RUN


@pytest.mark.parametrize("value", ODD, ids=range(len(ODD)))
def test_odd_values_never_raise(value):
    fmt = recognise(value, None)
    assert fmt.name in formats.BY_NAME
    assert isinstance(fmt.message(), str) and len(fmt.message()) <= 300
    assert isinstance(fmt.reason(), str)
    assert isinstance(fmt.response_schema(), dict)
    fmt.summary(value)
    fmt.cancelled_value()
    fmt.card_context(None, None)
    again = formats.by_name(fmt.name, value)  # as stored and read back
    assert again.message() == fmt.message()


def test_unknown_stored_kind_is_generic():
    assert formats.by_name("no-such-format", {"a": 1}).name == "generic"
