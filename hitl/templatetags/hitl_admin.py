"""Template tags of the admin queue: how many interrupts wait for the current user."""

from __future__ import annotations

from typing import Any

from django import template

from hitl.models import AgentInterrupt
from hitl.selectors import decidable_interrupts

register = template.Library()


@register.simple_tag(takes_context=True)
def pending_count(context: dict[str, Any]) -> int:
    """Pending interrupts the user may decide (one COUNT on the status index)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return 0
    known = getattr(request, "hitl_pending_count", None)  # set by the unfiltered queue
    if known is not None:
        return known
    return decidable_interrupts(user).filter(status=AgentInterrupt.Status.PENDING).count()
