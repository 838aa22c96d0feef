"""One error shape for the whole API: {code, detail, fields?}."""

from __future__ import annotations

import logging
from typing import Any

import redis
from django.conf import settings
from django.core.exceptions import DisallowedHost, PermissionDenied, RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import bad_request as default_bad_request
from django.views.defaults import page_not_found
from django.views.defaults import server_error as default_server_error
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from agentsite.errors import ServiceError
from agentsite.pool_recovery import check_pool_soon
from agentsite.surfaces import json_surface


def _flatten(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {key: _flatten(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_flatten(item) for item in detail]
    return str(detail)


log = logging.getLogger(__name__)

# Postgres or Redis not answering (down, restarting, pool exhausted): a 503 the client
# may retry after a moment, not a 500.
UNAVAILABLE = (OperationalError, InterfaceError, redis.ConnectionError, redis.TimeoutError)


def _too_big_body() -> dict[str, Any]:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return {"code": "too_large", "detail": f"The request body is over {limit} bytes."}


def unavailable_body(exc: Exception) -> dict[str, Any]:
    log.warning("backing service unavailable: %s: %s", type(exc).__name__, exc)
    if isinstance(exc, (OperationalError, InterfaceError)):
        check_pool_soon()  # dead pooled connections go now, not one slow request each
    return {"code": "unavailable",
            "detail": "The database or Redis is not answering; retry in a few seconds."}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, RequestDataTooBig):
        return Response(_too_big_body(), status=413)
    if isinstance(exc, UNAVAILABLE):
        return Response(unavailable_body(exc), status=503, headers={"Retry-After": "2"})
    if isinstance(exc, ServiceError):
        body: dict[str, Any] = {"code": exc.code, "detail": exc.detail, **exc.extra}
        if exc.fields:
            body["fields"] = exc.fields
        return Response(body, status=exc.status)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        detail = exc.detail
        if isinstance(detail, dict):
            body: dict[str, Any] = {"code": "invalid", "detail": "Invalid request body.",
                                    "fields": _flatten(detail)}
        else:
            body = {"code": "invalid", "detail": "; ".join(_flatten(detail))}
    else:
        codes = exc.get_codes() if isinstance(exc, exceptions.APIException) else "error"
        body = {"code": codes if isinstance(codes, str) else "error",
                "detail": str(getattr(exc, "detail", exc))}
    response.data = body
    return response


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """URL-level 404: JSON in the API's error shape on the JSON surfaces, Django's page
    elsewhere."""
    if json_surface(request.path):
        return JsonResponse({"code": "not_found", "detail": "Not found."}, status=404)
    return page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django-level 400s (raised outside DRF views): JSON for the API and AG-UI; a body over
    DATA_UPLOAD_MAX_MEMORY_SIZE is a 413 there."""
    if json_surface(request.path):
        if isinstance(exception, RequestDataTooBig):
            return JsonResponse(_too_big_body(), status=413)
        if isinstance(exception, DisallowedHost):
            return JsonResponse({"code": "disallowed_host",
                                 "detail": "This Host is not in ALLOWED_HOSTS."}, status=400)
        return JsonResponse({"code": "bad_request", "detail": "Bad request."}, status=400)
    return default_bad_request(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if json_surface(request.path):
        return JsonResponse({"code": "server_error", "detail": "Server error."}, status=500)
    return default_server_error(request)
