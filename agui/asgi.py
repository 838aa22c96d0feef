"""ASGI routing for ``/agui/``: Django without its middleware stack.

Why: under ASGI every sync-only middleware step is a thread hop (``sync_to_async``)
in each direction, on every request; with our seven middlewares that is a fixed
cost of several milliseconds per AG-UI request (5 requests per `dev` run). The
AG-UI views are async, authenticate themselves (``Authorization: Token`` or the
session cookie with DRF's CSRF check — ``agui.views._authenticate``) and
answer JSON or SSE, so sessions-as-middleware, messages, clickjacking and
common-redirect middlewares have nothing to do there. URL routing, signals and
exception handling are still Django's.
"""

from __future__ import annotations

from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response

PREFIX = "/agui/"


class BareASGIHandler(ASGIHandler):
    """Django's ASGI handler with an empty middleware chain."""

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async)
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        self._middleware_chain = convert_exception_to_response(
            self._get_response_async if is_async else self._get_response)


def route_agui(app: Any) -> Any:
    """``app`` for everything, except HTTP requests under ``/agui/``."""
    bare = BareASGIHandler()

    async def application(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PREFIX):
            await bare(scope, receive, send)
        else:
            await app(scope, receive, send)

    return application
