"""Content-Security-Policy on every response: scripts only from our own origin.

No 'unsafe-inline' and no 'unsafe-eval' for scripts, so injected markup cannot run
script (the pages keep all JavaScript in static files; htmx runs with allowEval off).
Styles allow 'unsafe-inline' because the Django admin sets style attributes.
drf-spectacular's Swagger UI / ReDoc pages boot with an inline script; they are listed
in CSP_EXEMPT_PATHS (API documentation only, no user content).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse

DEFAULT_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])


class ContentSecurityPolicyMiddleware:
    # Both: under ASGI it stays on the event loop (agentsite.loop_middleware says why).
    sync_capable = async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.policy = getattr(settings, "CONTENT_SECURITY_POLICY", DEFAULT_POLICY)
        self.exempt = tuple(getattr(settings, "CSP_EXEMPT_PATHS", ()))
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return self._with_policy(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self._with_policy(request, await self.get_response(request))

    def _with_policy(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if not request.path.startswith(self.exempt):
            response.headers.setdefault("Content-Security-Policy", self.policy)
        return response
