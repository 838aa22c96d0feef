"""Both transcripts of a fork link to each other: ``{% fork_links conversation %}`` says
where a forked conversation came from and which forks were made from this one."""

from __future__ import annotations

from typing import Any

from django import template

from runs.models import AgentRun, Conversation

register = template.Library()


@register.inclusion_tag("pages/_fork_links.html")
def fork_links(conversation: Conversation) -> dict[str, Any]:
    origin = None
    if conversation.forked_from_id:
        origin = (AgentRun.objects.filter(pk=conversation.forked_from_id)
                  .values("conversation_id", "conversation__title").first())
    # One query: the conversations forked from this one's runs.
    forks = list(Conversation.objects.filter(forked_from__conversation=conversation)
                 .order_by("created_at").values("pk", "title", "created_at"))
    return {"origin": origin, "forks": forks}
