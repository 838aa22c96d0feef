"""The approval queue's presence: a column saying who is on each open question now (live
with ``presence.js``, which only shows it here: a queue row is not looking at it) and the
"not being looked at" filter (``hitl.presence.NotLookedAtFilter``)."""

from __future__ import annotations

from django.contrib import admin
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from hitl.models import AgentInterrupt
from hitl.presence import ANSWERING, presence_of, ttl


class PresenceColumn:
    """A mixin for the queue's ModelAdmin: ``on_it`` in ``list_display``."""

    @admin.display(description="on it now")
    def on_it(self, obj: AgentInterrupt) -> SafeString | str:
        if obj.status != AgentInterrupt.Status.PENDING:
            return "—"
        html = render_to_string("hitl/_presence.html", {
            "run_id": obj.run_id, "interrupt_id": obj.interrupt_id, "beat": False, "me": "",
            "others": presence_of(obj.run_id, obj.interrupt_id), "answering": ANSWERING,
            "ttl": ttl(), "url": reverse("pages:presence")})
        return mark_safe(html)  # noqa: S308 - our template, autoescaped
