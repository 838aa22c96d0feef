"""``{% presence_line run_id interrupt_id %}``: who else is on an open question, as of
page load (``hitl.presence``); ``static/agentsite/presence.js`` keeps it live and renews
the viewer's own entry (``beat=False``: show only, as a queue row does)."""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse

from hitl.presence import ANSWERING, presence_of, ttl

register = template.Library()


@register.inclusion_tag("hitl/_presence.html", takes_context=True)
def presence_line(context: Any, run_id: Any, interrupt_id: str, beat: bool = True) -> dict:
    user = context.get("user")
    me = getattr(user, "pk", None)
    others = [p for p in presence_of(run_id, interrupt_id) if p.user_id != me]
    return {"run_id": run_id, "interrupt_id": interrupt_id, "beat": beat, "me": me,
            "others": others, "answering": ANSWERING, "ttl": ttl(),
            "url": reverse("pages:presence")}
