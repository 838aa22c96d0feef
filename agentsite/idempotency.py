"""``Idempotency-Key`` for unsafe API calls: the same key with the same body replays the
first response; the same key with another body is a 422; a retry while the first request
still runs is a 409 ``idempotency_in_progress``. Keys are per user and kept for a day (like
Stripe's); the decision service's row locks still guarantee that an answer is consumed once
whatever clients send.

Keys live in Postgres, next to the changes they guard: a request that committed is
replayed after any Redis failure. Claiming a key, storing its answer and releasing it
are each one short statement of their own, never around the view's transaction, and the
last two are compare-and-set on the claiming request's token: a request that lost its key
(it ran longer than ``IN_PROGRESS_SECONDS`` and another took over) never overwrites it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import wraps
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from agentsite.errors import Conflict, InvalidInput, ServiceError
from agentsite.models import IdempotencyKey

log = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
KEEP_SECONDS = 24 * 3600
# A request that died mid-way must not block its key forever.
IN_PROGRESS_SECONDS = 60


def fingerprint(method: str, path: str, data: Any) -> str:
    try:
        # The strict parser bounds the depth, so this recursion is bounded too.
        body = json.dumps(data, sort_keys=True, separators=(",", ":"), cls=JSONEncoder)
    except (RecursionError, ValueError, TypeError):
        raise InvalidInput("The request body cannot be fingerprinted.", code="invalid") from None
    return hashlib.sha256(f"{method} {path}\n{body}".encode()).hexdigest()


def _check_key(key: str) -> None:
    if not (1 <= len(key) <= 255) or not key.isascii() or not key.isprintable():
        raise InvalidInput(f"{HEADER} must be 1-255 printable ASCII characters",
                           code="invalid_idempotency_key", fields={HEADER: ["invalid"]})


@dataclass(frozen=True)
class Claim:
    pk: int
    token: uuid.UUID


def claim(user_id: int, key: str, fp: str) -> Claim | Response:
    """Take the key for one request, or answer for it: a replay, a 409 or a 422 (raised)."""
    key_hash = hashlib.sha256(key.encode()).hexdigest()
    token, now = uuid.uuid4(), timezone.now()
    if random.random() < 0.01:  # keep the table to about a day of keys
        IdempotencyKey.objects.filter(claimed_at__lt=now - timedelta(seconds=KEEP_SECONDS),
                                      status__isnull=False).delete()
    try:
        with transaction.atomic():
            row = IdempotencyKey.objects.create(user_id=user_id, key_hash=key_hash,
                                                fingerprint=fp, token=token)
        return Claim(row.pk, token)
    except IntegrityError:
        pass
    row = IdempotencyKey.objects.filter(user_id=user_id, key_hash=key_hash).first()
    if row is None:  # released between our INSERT and SELECT: ask the client to retry
        raise Conflict("retry the request", code="idempotency_in_progress")
    age = (now - row.claimed_at).total_seconds()
    expired = age > KEEP_SECONDS
    abandoned = row.status is None and age > IN_PROGRESS_SECONDS
    if not (expired or abandoned):
        if row.fingerprint != fp:
            raise ServiceError(f"this {HEADER} was used with a different request body",
                               code="idempotency_key_reused", status=422)
        if row.status is None:
            raise Conflict(f"a request with this {HEADER} is still in progress",
                           code="idempotency_in_progress")
        return Response(row.body, status=row.status, headers={"Idempotent-Replayed": "true"})
    # Take over an expired key or one whose request died: compare-and-set on its token.
    taken = IdempotencyKey.objects.filter(pk=row.pk, token=row.token).update(
        token=token, fingerprint=fp, status=None, body=None, claimed_at=now)
    if not taken:
        raise Conflict(f"a request with this {HEADER} is still in progress",
                       code="idempotency_in_progress")
    return Claim(row.pk, token)


def store(held: Claim, response: Response) -> bool:
    """Record the answer if this request still holds the key; False if it lost it."""
    body = json.loads(json.dumps(response.data, cls=JSONEncoder))
    stored = IdempotencyKey.objects.filter(pk=held.pk, token=held.token).update(
        status=response.status_code, body=body)
    if not stored:
        log.warning("idempotency key %s was taken over before this request ended", held.pk)
    return bool(stored)


def release(held: Claim) -> None:
    """Let the client retry with the same key (nothing was done, or a crash)."""
    IdempotencyKey.objects.filter(pk=held.pk, token=held.token, status__isnull=True).delete()


def idempotent(view: Callable[..., Response]) -> Callable[..., Response]:
    """Decorate a DRF view method (POST) to honour the Idempotency-Key header."""

    @wraps(view)
    def wrapper(self: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if key is None:
            return view(self, request, *args, **kwargs)
        _check_key(key)
        # Parses the body first: bad JSON is a 400 here and takes no key.
        held = claim(request.user.pk, key, fingerprint(request.method, request.path,
                                                       request.data))
        if isinstance(held, Response):
            return held
        try:
            response = view(self, request, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - errors are answers too, and are replayed
            try:
                response = self.handle_exception(exc)
            except Exception:
                release(held)
                raise
        if response.status_code >= 500:
            release(held)
            return response
        store(held, response)
        return response

    return wrapper
