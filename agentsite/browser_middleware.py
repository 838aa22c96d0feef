"""The browser's middleware, skipped by token-authenticated API requests (issue 37).

Sessions, CSRF, the session's user and flash messages serve browsers. A request to an API
door (``/api/``, ``/agui/``, the LangGraph API) that carries an API token
(``Authorization: Token|Bearer …`` or ``X-Api-Key``) is authenticated by the door itself,
token first (``agentsite.token_auth``: a token header is either a valid token or a 401,
never a session), and uses none of them. Each class here is Django's own middleware
(a subclass, so the admin's checks still find it) whose ``__call__`` hands such a request
straight to the next layer: under ASGI that also spares the two thread hops a sync
middleware's ``process_request`` / ``process_response`` each cost. Any other request
(a browser's page, or its fetch with the session cookie) takes them as before.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware

from agentsite.token_auth import API_KEY_HEADER, KEYWORDS

API_PREFIXES = ("/api/", "/agui/", "/" + settings.LANGGRAPH_API_PREFIX)
_KEYWORDS = tuple(k.lower() + " " for k in KEYWORDS)


def token_api_request(request: HttpRequest) -> bool:
    """An API door's request that names a token: the door authenticates it, no session."""
    if not request.path_info.startswith(API_PREFIXES):
        return False
    if API_KEY_HEADER in request.headers:
        return True
    return request.headers.get("Authorization", "").lower().startswith(_KEYWORDS)


class _ForBrowsers:
    """Mixed in before a Django middleware: token API requests go around it."""

    get_response: Any

    def __call__(self, request: HttpRequest) -> Any:
        if token_api_request(request):
            # Under ASGI the next layer's coroutine, awaited by the handler as ours is.
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]


class Sessions(_ForBrowsers, SessionMiddleware):
    pass


class Csrf(_ForBrowsers, CsrfViewMiddleware):
    def process_view(self, request: HttpRequest, callback: Any, callback_args: Any,
                     callback_kwargs: Any) -> Any:
        if token_api_request(request):
            return None  # no cookie, no form: DRF checks CSRF itself for a session
        return super().process_view(request, callback, callback_args, callback_kwargs)


class Authentication(_ForBrowsers, AuthenticationMiddleware):
    pass


class Messages(_ForBrowsers, MessageMiddleware):
    pass
