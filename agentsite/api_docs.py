"""Documented error responses for the OpenAPI schema: every error has one shape. And
the API token's security scheme."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers


class TokenScheme(OpenApiAuthenticationExtension):
    """``agentsite.token_auth.TokenAuthentication`` in the schema (registered on import)."""

    target_class = "agentsite.token_auth.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "apiKey", "in": "header", "name": "Authorization",
                "description": "`Token <token>` or `Bearer <token>` (or the header "
                               "`X-Api-Key: <token>`); scopes: read, answer, start, "
                               "metrics, admin (docs/security.md)"}


class ErrorSerializer(serializers.Serializer):
    """The one error shape of the API."""

    code = serializers.CharField(help_text="machine-readable, e.g. not_pending, version_mismatch")
    detail = serializers.CharField(help_text="what is wrong, for people")
    fields = serializers.DictField(required=False, help_text="per-field problems")


_MEANING = {
    400: "invalid request body or payload (`fields` names each problem)",
    401: "not authenticated, or the token is revoked or expired",
    403: "forbidden (e.g. CSRF token missing with session auth; `insufficient_scope`: the "
         "token's scopes do not allow this)",
    404: "not found, or not yours",
    409: "conflict; `code` is one of not_pending, run_not_paused, version_mismatch, "
         "already_decided, thread_busy, agent_mismatch, run_finished, idempotency_in_progress",
    410: "the interrupt has expired",
    415: "unsupported media type",
    422: "Idempotency-Key reused with a different body",
}


def errors(*statuses: int) -> dict[int, OpenApiResponse]:
    """``{status: OpenApiResponse(ErrorSerializer)}`` for extend_schema(responses=...)."""
    return {s: OpenApiResponse(ErrorSerializer, description=_MEANING[s]) for s in statuses}


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
    description="Replays the first response for the same key and body (per user, 24 h); "
                "another body with the same key is a 422.")


def document_page_size_errors(result: dict, generator: object, request: object,
                              public: bool) -> dict:
    """drf-spectacular hook: every paginated list documents the 400 of a bad ``page_size``."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            names = {param.get("name") for param in operation.get("parameters", [])}
            responses = operation.get("responses", {})
            template = responses.get("404") or responses.get("401")
            if "page_size" in names and "400" not in responses and template:
                responses["400"] = {**template,
                                    "description": "invalid query (`fields` names it)"}
    return result


def document_throttling(result: dict, generator: object, request: object,
                        public: bool) -> dict:
    """drf-spectacular hook: every authenticated operation documents the 429 of the request
    limits (agentsite.throttles), with its Retry-After header."""
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or not operation.get("security"):
                continue
            responses = operation.get("responses", {})
            template = responses.get("401")
            if template and "429" not in responses:
                responses["429"] = {
                    **template, "description": "too many requests (`code`: throttled)",
                    "headers": {"Retry-After": {"schema": {"type": "integer"},
                                                "description": "seconds to wait"}}}
    return result
