"""ASGI routing for ``/agui/``: Django without its middleware stack.

Why: under ASGI every sync-only middleware step is a thread hop (``sync_to_async``)
in each direction, on every request; with our seven middlewares that is a fixed
cost of several milliseconds per AG-UI request (5 requests per `dev` run). The
AG-UI views are async, authenticate themselves (``Authorization: Token`` or the
session cookie with DRF's CSRF check — ``agui.views._authenticate``) and
answer JSON or SSE, so sessions-as-middleware, messages and common-redirect
middlewares have nothing to do there. URL routing, signals and exception handling
are still Django's.

What the skipped middleware would have guarded is done here, in the same thread as
the view (no extra hop): the Host header is checked against ALLOWED_HOSTS (a JSON
400 otherwise), and every answer, errors included, carries the security headers of
SecurityMiddleware and XFrameOptionsMiddleware (nosniff, Referrer-Policy,
Cross-Origin-Opener-Policy, X-Frame-Options). Errors are JSON (``handler400`` /
``handler500`` in ``agentsite.api_errors``).
"""

from __future__ import annotations

import time
from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware

from agentsite import timing

PREFIX = "/agui/"


def _unused(request: HttpRequest) -> HttpResponse:
    raise AssertionError("only the response hooks of these middlewares are used")


# Only their process_response hooks are called: plain header setters, no I/O.
_security = SecurityMiddleware(_unused)
_frame = XFrameOptionsMiddleware(_unused)


def _with_headers(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    response = _security.process_response(request, response)
    return _frame.process_response(request, response)


class BareASGIHandler(ASGIHandler):
    """Django's ASGI handler with no middleware chain, only the guards above."""

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        # No ThreadSensitiveContext: Django's makes a new thread per request for its
        # thread-sensitive calls (the request signals' receivers, ``response.close``)
        # and another one to join it. Here those few calls share asgiref's one
        # process-wide thread instead; the views' database steps never were
        # thread-sensitive (``agui.views._db_step``).
        await self.handle(scope, receive, send)

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async)
        self._view_middleware = []
        self._template_response_middleware = []
        self._exception_middleware = []
        if not is_async:
            raise RuntimeError("the /agui/ handler runs under ASGI only")

        async def checked(request: HttpRequest) -> HttpResponse:
            request.get_host()  # DisallowedHost (a 400) unless in ALLOWED_HOSTS
            return await self._get_response_async(request)

        inner = convert_exception_to_response(checked)

        async def chain(request: HttpRequest) -> HttpResponse:
            return _with_headers(request, await inner(request))

        self._middleware_chain = chain


def route_agui(app: Any) -> Any:
    """``app`` for everything, except HTTP requests under ``/agui/``."""
    bare = BareASGIHandler()

    async def application(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PREFIX):
            if timing.enabled:  # benchmarks only: when the request reached us
                scope["agentsite.arrived"] = time.time()
            await bare(scope, receive, send)
        else:
            await app(scope, receive, send)

    return application
