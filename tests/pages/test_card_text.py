"""What the cards and the queue say, without a database (issue 35, items 10 and 20): tool
chips after a decision, inline markdown in titles, a form answer's summary, the generic
card's options."""

from __future__ import annotations

import uuid

from django.template.loader import render_to_string
from django.utils import timezone

from hitl.cards import card_context
from hitl.formats import recognise
from hitl.models import AgentInterrupt
from pages.live import ToolCall
from pages.markdown import plain_inline, render_inline
from pages.tool_chips import chips

BATCHED = {"action_requests": [
    {"name": "send_email", "args": {"to": "alice@example.com", "body": "hi"}},
    {"name": "delete_file", "args": {"path": "/tmp/a"}},
    {"name": "delete_file", "args": {"path": "/tmp/b"}}],
    "review_configs": [{"action_name": "send_email",
                        "allowed_decisions": ["approve", "edit", "reject"]},
                       {"action_name": "delete_file", "allowed_decisions": ["approve", "reject"]}]}


def _interrupt(kind: str, request, decision=None, status="applied", **kw) -> AgentInterrupt:
    return AgentInterrupt(run_id=uuid.uuid4(), interrupt_id=f"i-{kind}", kind=kind,
                          request=request, decision=decision, status=status,
                          created_at=timezone.now(), **kw)


def test_batched_decisions_mark_their_calls_by_name_and_arguments():
    calls = [ToolCall(id="c1", name="send_email",
                      args='{"to": "alice@example.com", "body": "hi"}', result="sent"),
             ToolCall(id="c2", name="delete_file", args='{"path": "/tmp/a"}',
                      result="User rejected the tool call"),
             ToolCall(id="c3", name="delete_file", args='{"path": "/tmp/b"}', result="gone"),
             ToolCall(id="c4", name="lookup", args="{}", result="42")]
    asked = _interrupt("hitl_request", BATCHED, {"decisions": [
        {"type": "edit", "edited_action": {"name": "send_email",
                                           "args": {"to": "bob@example.com", "body": "hi"}}},
        {"type": "reject", "message": "no"}, {"type": "approve"}]})
    shown = {c.id: c for c in chips(calls, [asked])}
    assert shown["c1"].ran and shown["c1"].decision == "edit"
    assert '"bob@example.com"' in shown["c1"].args
    assert '"alice@example.com"' in shown["c1"].asked_args
    assert not shown["c2"].ran and shown["c2"].not_run == "rejected"
    assert shown["c3"].ran and shown["c3"].decision == "approve"
    assert shown["c4"].ran and shown["c4"].decision == ""  # nobody was asked
    # A pending question decides nothing yet.
    pending = _interrupt("hitl_request", BATCHED, status="pending")
    assert all(c.decision == "" for c in chips(calls, [pending]))


def test_a_per_call_decision_marks_the_call_it_names():
    calls = [ToolCall(id="a", name="delete_file", args='{"path": "/x"}', result="r"),
             ToolCall(id="b", name="delete_file", args='{"path": "/x"}', result="r")]
    asked = _interrupt("tool_approval", {"type": "tool_approval", "tool_call_id": "b",
                                         "name": "delete_file", "args": {"path": "/x"},
                                         "description": ""},
                       {"type": "reject"})
    shown = {c.id: c for c in chips(calls, [asked])}
    assert shown["a"].ran and not shown["b"].ran


def test_inline_markdown_is_rendered_safely_and_stripped_for_plain_text():
    text = "Send `report.pdf` to **alice**? <script>x</script> [l](javascript:1)"
    html = render_inline(text)
    assert "<code>report.pdf</code>" in html and "<strong>alice</strong>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "<a" not in html
    assert plain_inline(text) == "Send report.pdf to alice? <script>x</script> [l](javascript:1)"


def test_card_title_renders_inline_markdown():
    item = _interrupt("generic", "Use `main` or **beta**?", status="pending")
    html = render_to_string("hitl/cards/card.html", {
        "card": card_context(item, action_url="/a/", preview=True)})
    assert "Use <code>main</code> or <strong>beta</strong>?</h3>" in html
    assert "`" not in html.split("card__title")[1].split("</h3>")[0]


def test_generic_options_have_no_default_styled_option():
    item = _interrupt("generic", {"question": "Which?", "options": ["a", "b"]},
                      status="pending")
    html = render_to_string("hitl/cards/card.html", {
        "card": card_context(item, action_url="/a/", preview=True)})
    assert 'name="option" value="0" class="btn"' in html
    assert "btn--primary\">a<" not in html


def test_a_form_answer_reads_label_value_in_the_forms_order():
    # Stored as jsonb gives it back: keys shortest first.
    schema = {"type": "object", "required": ["title", "notes", "count", "urgent"],
              "properties": {"urgent": {"type": "boolean"}, "count": {"type": "integer"},
                             "notes": {"type": "string", "title": "Your notes"},
                             "title": {"type": "string"}, "tags": {"type": "array"}}}
    fmt = recognise({"question": "Plan"}, schema)
    assert fmt.summary({"tags": ["a", "b"], "count": 2, "notes": "n", "title": "T",
                        "urgent": True}) == (
        "Title: T; Your notes: n; Count: 2; Urgent: yes; Tags: a, b")
