"""The approval queue's presence: under each open row's question, who is on it now (live
with ``presence.js``, which only shows it here: a queue row is not looking at it), and
the "not being looked at" filter (``hitl.presence.NotLookedAtFilter``)."""

from __future__ import annotations

from django.template.loader import render_to_string
from django.urls import reverse

from hitl.models import AgentInterrupt
from hitl.presence import ANSWERING, presence_of, ttl


def presence_cell(obj: AgentInterrupt) -> str:
    """The presence line under an open row's question (in that column's width: a column
    of its own would push the queue past 1300 px); "" for a question no longer open."""
    if obj.status != AgentInterrupt.Status.PENDING:
        return ""
    return render_to_string("hitl/_presence.html", {
        "run_id": obj.run_id, "interrupt_id": obj.interrupt_id, "beat": False, "me": "",
        "others": presence_of(obj.run_id, obj.interrupt_id), "answering": ANSWERING,
        "ttl": ttl(), "url": reverse("pages:presence")})
