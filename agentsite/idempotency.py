"""``Idempotency-Key`` for unsafe API calls: the same key with the same body replays the
first response; the same key with another body is a 422. Keys are per user and kept
in Redis for a day (like Stripe's); the decision service's row locks still guarantee
that an answer is consumed once whatever clients send.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from functools import wraps
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from rest_framework.request import Request
from rest_framework.response import Response

from agentsite.errors import Conflict, InvalidInput, ServiceError

HEADER = "Idempotency-Key"
KEEP_SECONDS = 24 * 3600
# A request that died mid-way must not block its key forever.
IN_PROGRESS_SECONDS = 60

_local = threading.local()


def _redis() -> redis.Redis:
    client = getattr(_local, "redis", None)
    if client is None:
        client = _local.redis = redis.Redis(**settings.EVENTSTREAM_STORAGE_CONNECTION)
    return client


def _fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def _check_key(key: str) -> None:
    if not (1 <= len(key) <= 255) or not key.isascii() or not key.isprintable():
        raise InvalidInput(f"{HEADER} must be 1-255 printable ASCII characters",
                           code="invalid_idempotency_key", fields={HEADER: ["invalid"]})


def idempotent(view: Callable[..., Response]) -> Callable[..., Response]:
    """Decorate a DRF view method (POST) to honour the Idempotency-Key header."""

    @wraps(view)
    def wrapper(self: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if key is None:
            return view(self, request, *args, **kwargs)
        _check_key(key)
        fingerprint = _fingerprint(request)  # parses the body: bad JSON is a 400 here
        # The database name keeps apart deployments (and test databases) sharing one Redis.
        slot = (f"idempotency:{connection.settings_dict['NAME']}:{request.user.pk}:"
                f"{hashlib.sha256(key.encode()).hexdigest()}")
        client = _redis()
        claimed = client.set(slot, json.dumps({"fingerprint": fingerprint}), nx=True,
                             ex=IN_PROGRESS_SECONDS)
        if not claimed:
            return _replay(client.get(slot), fingerprint)
        try:
            response = view(self, request, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - errors are answers too, and are replayed
            try:
                response = self.handle_exception(exc)
            except Exception:
                client.delete(slot)  # a crash: let the client retry with the same key
                raise
        if response.status_code >= 500:
            client.delete(slot)
            return response
        record = {"fingerprint": fingerprint, "status": response.status_code,
                  "body": response.data}
        client.set(slot, json.dumps(record, default=str), ex=KEEP_SECONDS)
        return response

    return wrapper


def _replay(raw: bytes | None, fingerprint: str) -> Response:
    if raw is None:  # expired between our SET and GET: extremely rare; ask to retry
        raise Conflict("retry the request", code="idempotency_in_progress")
    record = json.loads(raw)
    if record["fingerprint"] != fingerprint:
        raise ServiceError(f"this {HEADER} was used with a different request body",
                           code="idempotency_key_reused", status=422)
    if "status" not in record:
        raise Conflict(f"a request with this {HEADER} is still in progress",
                       code="idempotency_in_progress")
    return Response(record["body"], status=record["status"],
                    headers={"Idempotent-Replayed": "true"})
