"""The door's HTTP plumbing: authentication, JSON bodies, and the Platform's error shape.

Every error answers ``{"detail": "..."}`` (what LangGraph's server and its SDK use) with
a 4xx status; a service error keeps its status. Tokens are the API's own
(``agentsite.token_auth``), read from ``X-Api-Key`` (what ``langgraph-sdk`` sends), from
``Authorization: Bearer <key>`` or ``Authorization: Token <key>``, each within its scopes
(``required_scope``) and the request limits; a browser session works too (with its CSRF
check), for a chat UI served by this site.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ValidationError
from rest_framework import exceptions

from agentsite import parsers
from agentsite.api_errors import UNAVAILABLE, unavailable_body
from agentsite.errors import ServiceError
from agentsite.token_auth import Scope, door_authenticate
from streams.db import release_db_connections


class LgError(Exception):
    """An answer in the Platform's error shape."""

    def __init__(self, status: int, detail: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}

    @classmethod
    def of(cls, err: ServiceError) -> LgError:
        # An answer or input the services refuse as invalid is the Platform's 422.
        return cls(422 if err.status == 400 else err.status, err.detail)

    def response(self) -> JsonResponse:
        response = JsonResponse({"detail": self.detail}, status=self.status)
        for name, value in self.headers.items():
            response[name] = value
        if self.status == 401:
            response["WWW-Authenticate"] = "Bearer"
        return response


def authenticate(request: HttpRequest) -> Any:
    """The request's user (401 when none; 403 for a session without its CSRF token, or a
    token whose scopes do not cover the request; 429 over the request limits), as every
    door authenticates (``agentsite.token_auth.door_authenticate``)."""
    try:
        user, _ = door_authenticate(request, required_scope(request))
    except ServiceError as err:
        retry = err.extra.get("retry_after")
        raise LgError(err.status, err.detail,
                      headers={"Retry-After": str(retry)} if retry else None) from None
    return user


# POSTs that only read (the SDK's searches and counts, history and state lookups).
_READS = re.compile(r"/(search|count|history|versions|state/checkpoint)$")
_RUNS = re.compile(r"(^|/)runs(/stream|/wait)?$")


def required_scope(request: HttpRequest) -> str:
    """The token scope a request needs (docs/security.md): reading for GET and the POSTs
    that read; a run: ``start``, or ``answer`` when its ``command`` resumes; cancelling a
    run: ``answer``; creating, changing or deleting one's threads: ``start``; anything
    else: ``admin``."""
    path = request.path_info.rstrip("/")
    if request.method in ("GET", "HEAD", "OPTIONS") or (
            request.method == "POST" and _READS.search(path)):
        return Scope.READ
    if request.method == "POST" and path.endswith("/cancel"):
        return Scope.ANSWER
    if request.method == "POST" and _RUNS.search(path):
        try:
            data = parsers.loads(request.body) if request.body.strip() else {}
        except (ServiceError, exceptions.ParseError, RequestDataTooBig):
            data = {}  # the handler answers the bad body; the smallest scope of a run
        command = data.get("command") if isinstance(data, dict) else None
        return Scope.ANSWER if isinstance(command, dict) and "resume" in command \
            else Scope.START
    if re.search(r"(^|/)threads(/[^/]+)?$", path):
        return Scope.START
    return Scope.ADMIN


def body(request: HttpRequest, model: type[BaseModel]) -> Any:
    """The JSON body, checked (depth, NUL, surrogates) and validated by ``model``."""
    try:
        raw = request.body
    except RequestDataTooBig:
        raise LgError(413, "The request body is over "
                      f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.") from None
    try:
        data = parsers.loads(raw) if raw.strip() else {}
    except ServiceError as err:
        raise LgError(422, err.detail) from None
    except exceptions.ParseError as exc:
        raise LgError(422, f"The body is not JSON: {exc.detail}") from None
    return validated(model, data)


def validated(model: type[BaseModel], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise LgError(422, f"{where}: {first['msg']}") from None


def ok(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> HttpResponse:
    response = HttpResponse(json.dumps(data, cls=DjangoJSONEncoder, ensure_ascii=False),
                            status=status, content_type="application/json")
    for key, value in (headers or {}).items():
        response[key] = value
    return response


def _answer(func: Callable[..., HttpResponse], request: HttpRequest, *args: Any,
            **kwargs: Any) -> HttpResponse:
    try:
        return func(request, *args, **kwargs)
    except LgError as err:
        return err.response()
    except ServiceError as err:
        return LgError.of(err).response()
    except UNAVAILABLE as exc:
        return _unavailable(exc)


def _unavailable(exc: Exception) -> JsonResponse:
    response = JsonResponse({"detail": unavailable_body(exc)["detail"]}, status=503)
    response["Retry-After"] = "2"
    return response


def endpoint(**methods: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """One URL's view: each HTTP method to its handler ``f(request, user, **kwargs)``,
    run after authentication; other methods answer 405."""

    @csrf_exempt  # token clients send no CSRF token; session auth checks CSRF itself (DRF)
    def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        handler = methods.get(request.method.lower())
        if handler is None:
            return JsonResponse({"detail": "Method Not Allowed"}, status=405)

        def call(request: HttpRequest, **kwargs: Any) -> HttpResponse:
            return handler(request, authenticate(request), **kwargs)

        return _answer(call, request, **kwargs)

    return view


def streaming(func: Callable[..., Any]) -> Callable[..., Any]:
    """An async view whose preparation (``func``, sync: authentication, services) runs in
    a worker thread that gives its database connection back before the answer streams.
    ``func`` returns a response, or an async callable giving one later."""

    def prepare(request: HttpRequest, **kwargs: Any) -> Any:
        try:
            return _answer(lambda r, **k: func(r, authenticate(r), **k), request, **kwargs)
        finally:
            release_db_connections()  # an open stream holds no database connection

    @csrf_exempt
    @functools.wraps(func)
    async def view(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        result = await sync_to_async(prepare, thread_sensitive=False)(request, **kwargs)
        if isinstance(result, HttpResponseBase):
            return result
        try:  # an answer given later (``runs.wait``, ``join``): awaited here
            return await result()
        except LgError as err:
            return err.response()
        except ServiceError as err:
            return LgError.of(err).response()
        except UNAVAILABLE as exc:
            return _unavailable(exc)

    return view
