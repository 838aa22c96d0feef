"""A tool approval's question line names the call (issue 35 item 13): the tool and a short,
bounded form of its arguments, instead of the middleware's "Tool execution requires
approval" on every row; the raw value is not touched."""

from __future__ import annotations

import copy

from hitl.formats import recognise
from hitl.formats.base import MESSAGE_MAX

DEFAULT = ("Tool execution requires approval\n\nTool: send_email\n"
           "Args: {'to': 'x@example.com', 'subject': 'Hi there'}")


def per_call(name: str, args: dict, description: str) -> dict:
    return {"type": "tool_approval", "tool_call_id": "c1", "name": name, "args": args,
            "description": description}


def test_per_call_names_the_tool_and_its_arguments():
    value = per_call("send_email", {"to": "x@example.com", "subject": "Hi there"}, DEFAULT)
    kept = copy.deepcopy(value)
    fmt = recognise(value)
    assert fmt.message() == "Approve send_email(to=x@example.com, subject=Hi there)"
    assert value == kept  # verbatim
    # Two calls of one tool read differently.
    other = recognise(per_call("send_email", {"to": "y@example.com"}, DEFAULT))
    assert other.message() != fmt.message()


def test_own_description_is_kept_after_the_call():
    fmt = recognise(per_call("delete_file", {"path": "/tmp/report"},
                             "Deleting a file cannot be undone"))
    assert fmt.message() == ("Approve delete_file(path=/tmp/report): "
                             "Deleting a file cannot be undone")


def test_long_arguments_are_bounded():
    fmt = recognise(per_call("send_email", {"to": "x@example.com", "body": "b" * 5000,
                                            "tags": list(range(500))}, DEFAULT))
    text = fmt.message()
    assert text.startswith("Approve send_email(to=x@example.com, body=bbb")
    assert "…" in text and len(text) <= len("Approve ") + 120  # the call's bound
    huge = recognise(per_call("t" * 1000, {"a": 1}, "d" * 1000))
    assert len(huge.message()) <= MESSAGE_MAX


def test_batched_names_each_call():
    one = {"action_requests": [{"name": "send_email", "args": {"to": "x@example.com"},
                                "description": DEFAULT}],
           "review_configs": [{"action_name": "send_email",
                               "allowed_decisions": ["approve"]}]}
    assert recognise(one).message() == "Approve send_email(to=x@example.com)"
    two = {"action_requests": [*one["action_requests"],
                               {"name": "delete_file", "args": {"path": "/tmp/r"}}],
           "review_configs": one["review_configs"]}
    assert recognise(two).message() == (
        "Approve 2 tool calls: send_email(to=x@example.com), delete_file(path=/tmp/r)")
