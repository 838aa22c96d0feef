"""``/metrics``: the Prometheus text of every process's metrics (multiprocess mode) and
the state gauges, for a token with the ``metrics`` scope of a reviewer (or superuser),
or for an address in ``METRICS_ALLOW``. Anything else: 401 without a credential or with
a bad one, 403 with one that may not read it."""

from __future__ import annotations

import ipaddress
import os

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    start_http_server,
)
from prometheus_client.multiprocess import MultiProcessCollector
from rest_framework import exceptions

from agentsite.client_ip import client_ip
from agentsite.models import ApiToken
from agentsite.token_auth import raw_token, token_allows, token_authenticate
from hitl.selectors import is_reviewer
from observability.collectors import StateCollector


def address_allowed(address: str | None) -> bool:
    """Is ``address`` in ``METRICS_ALLOW`` (addresses or networks)?"""
    if not address:
        return False
    ip = ipaddress.ip_address(address)
    return any(ip in ipaddress.ip_network(entry, strict=False)
               for entry in settings.METRICS_ALLOW)


def _refusal(request: HttpRequest) -> JsonResponse | None:
    if address_allowed(client_ip(request)):
        return None
    try:
        raw = raw_token(request)
        if raw is None:
            return _error(401, "not_authenticated",
                          "A token with the metrics scope is required.")
        user, token = token_authenticate(raw, request)
    except exceptions.APIException as exc:
        return _error(exc.status_code, "authentication_failed", str(exc.detail))
    if not token_allows(token, ApiToken.Scope.METRICS):
        return _error(403, "insufficient_scope",
                      f"This token's scope ({token.scope}) does not allow this: it needs "
                      "'metrics'.")
    if not is_reviewer(user):
        return _error(403, "permission_denied", "Only reviewers may read the metrics.")
    return None


def _error(status: int, code: str, detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail, "code": code}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = "Token"
    return response


def exposition() -> bytes:
    """Every process's metrics (multiprocess mode; else this process's), then the state."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        counted = CollectorRegistry()
        MultiProcessCollector(counted)
    else:
        counted = REGISTRY
    state = CollectorRegistry()
    state.register(StateCollector())
    return generate_latest(counted) + generate_latest(state)


def serve_on_port() -> None:
    """``METRICS_PORT`` (a web process in a container of its own, scraped there by a
    Prometheus on the private network): serve the same exposition on that port, without
    the checks of ``/metrics`` (and without Django's, which refuse a Host that is an
    address). Set it only where the port is not published."""
    port = os.environ.get("METRICS_PORT")
    if port and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        registry.register(StateCollector())
        start_http_server(int(port), registry=registry)


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
