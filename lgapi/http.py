"""The door's HTTP plumbing: authentication, JSON bodies, and the Platform's error shape.

Every error answers ``{"detail": "..."}`` (what LangGraph's server and its SDK use) with
a 4xx status; a service error keeps its status. Tokens are the API's own
(``agentsite.token_auth``), read from ``X-Api-Key`` (what ``langgraph-sdk`` sends), from
``Authorization: Bearer <key>`` or ``Authorization: Token <key>``; a browser session
works too (with its CSRF check), for a chat UI served by this site.
"""

from __future__ import annotations

import functools
import json
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
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from agentsite import parsers
from agentsite.api_errors import UNAVAILABLE, unavailable_body
from agentsite.errors import ServiceError
from agentsite.token_auth import TokenAuthentication
from streams.db import release_db_connections


class LgError(Exception):
    """An answer in the Platform's error shape."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail

    @classmethod
    def of(cls, err: ServiceError) -> LgError:
        # An answer or input the services refuse as invalid is the Platform's 422.
        return cls(422 if err.status == 400 else err.status, err.detail)

    def response(self) -> JsonResponse:
        response = JsonResponse({"detail": self.detail}, status=self.status)
        if self.status == 401:
            response["WWW-Authenticate"] = "Bearer"
        return response


class ApiKeyAuthentication(TokenAuthentication):
    """The API token from ``X-Api-Key``: the project's token authentication, read from
    the header the LangGraph SDKs send."""

    def authenticate(self, request: Any) -> Any:
        key = request.META.get("HTTP_X_API_KEY", "").strip()
        if not key:
            return None
        return self.authenticate_credentials(key)


class BearerAuthentication(TokenAuthentication):
    """``Authorization: Bearer <key>``: the same tokens."""

    keyword = "Bearer"


def authenticate(request: HttpRequest) -> Any:
    """The request's user (401 when none; 403 for a session without its CSRF token)."""
    drf = Request(request, parsers=[JSONParser()], authenticators=[
        ApiKeyAuthentication(), BearerAuthentication(), TokenAuthentication(),
        SessionAuthentication()])
    try:
        user = drf.user
    except exceptions.APIException as exc:
        raise LgError(exc.status_code, str(exc.detail)) from None
    if not user or not user.is_authenticated:
        raise LgError(401, "Authentication credentials were not provided.")
    return user


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
