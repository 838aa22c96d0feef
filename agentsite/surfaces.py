"""Which surface a request path belongs to, where that decides the shape of an error."""

from __future__ import annotations

from django.conf import settings


def json_surface(path: str) -> bool:
    """Whether errors at ``path`` are JSON in the API's shape (``code``, ``detail``: the
    LangGraph API's clients read ``detail``): the API, AG-UI and the LangGraph API under
    its configurable prefix; Django's pages elsewhere."""
    return path.startswith(("/api/", "/agui/", f"/{settings.LANGGRAPH_API_PREFIX}"))
