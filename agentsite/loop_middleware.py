"""Django's middleware, run on the event loop under ASGI: no thread hop per hook.

Under ASGI, Django's ``MiddlewareMixin`` runs each ``process_request`` /
``process_response`` of an async stack through ``sync_to_async`` (a hop to the request's
thread and back), and the handler runs a sync-only middleware, with every middleware
inside it, in a thread (``load_middleware``'s ``adapt_method_mode``); a sync
``process_view`` hops on every request too. The hooks of the middleware below only read
and set headers, cookies and lazy attributes: CPU work, no I/O. So under ASGI they are
called on the loop, and a hook hops to the thread only when it will touch the database:
a session that was changed (its save), messages that were read or added (their store
writes the session). Under WSGI they are Django's classes unchanged.

Counted per request in ``tests/rules/test_thread_hops.py``; ``agentsite.checks`` keeps
``check --deploy``'s middleware checks, which look for Django's dotted names.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware


class OnTheLoop:
    """Mixin for a ``MiddlewareMixin`` subclass: under ASGI its hooks run on the loop.

    ``response_needs_thread`` says when ``process_response`` must run in the request's
    thread (it will use the database).
    """

    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)  # type: ignore[call-arg]
        # Our own flag, not Django's: which way ``__call__`` goes is decided here.
        self.on_the_loop = iscoroutinefunction(get_response)
        if self.on_the_loop and hasattr(self, "process_view"):
            # Django hops to a thread for a sync process_view in an async stack.
            sync_view = self.process_view

            async def process_view(*args: Any) -> Any:
                return sync_view(*args)

            self.process_view = markcoroutinefunction(process_view)

    def response_needs_thread(self, request: HttpRequest) -> bool:
        return False

    def __call__(self, request: HttpRequest) -> Any:
        # Under ASGI (the stack is async: Django marked this instance a coroutine
        # function, so it awaits what we return) the hooks run in ``on_loop``; under WSGI,
        # Django's own ``__call__``. Dispatching here rather than overriding Django's
        # undocumented async half keeps us on its public middleware API.
        if self.on_the_loop:
            return self.on_loop(request)
        return super().__call__(request)  # type: ignore[misc]

    async def on_loop(self, request: HttpRequest) -> HttpResponse:
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)  # type: ignore[attr-defined]
        if hasattr(self, "process_response"):
            if self.response_needs_thread(request):
                return await sync_to_async(self.process_response)(request, response)
            response = self.process_response(request, response)
        return response


class LoopSecurityMiddleware(OnTheLoop, SecurityMiddleware):
    pass


class LoopSessionMiddleware(OnTheLoop, SessionMiddleware):
    def response_needs_thread(self, request: HttpRequest) -> bool:
        # Saving reads and writes the session's row; an unchanged session is not saved.
        return request.session.modified or settings.SESSION_SAVE_EVERY_REQUEST


class LoopCommonMiddleware(OnTheLoop, CommonMiddleware):
    pass


class LoopCsrfViewMiddleware(OnTheLoop, CsrfViewMiddleware):
    pass


class LoopAuthenticationMiddleware(OnTheLoop, AuthenticationMiddleware):
    pass  # request.user stays lazy: read in the view's thread


class LoopMessageMiddleware(OnTheLoop, MessageMiddleware):
    def response_needs_thread(self, request: HttpRequest) -> bool:
        # Storing read or added messages updates the cookie and the session.
        storage = messages.get_messages(request)
        return bool(getattr(storage, "used", False) or getattr(storage, "added_new", False))


class LoopXFrameOptionsMiddleware(OnTheLoop, XFrameOptionsMiddleware):
    pass
