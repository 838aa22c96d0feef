"""``Idempotency-Key`` for unsafe API calls: the same key with the same body replays the
first response; the same key with another body is a 422; a retry while the first request
still runs is a 409 ``idempotency_in_progress``. Keys are per user and kept for a day (like
Stripe's); the decision service's row locks still guarantee that an answer is consumed once
whatever clients send.

Keys live in Postgres, and a keyed request is one transaction: taking the key, the view's
work and its stored answer commit together. After a crash (web process killed, connection
lost) either nothing of the request committed, and a retry runs it once, or all of it did,
and a retry replays the answer: never a second run of a request that committed. The view's
services nest inside (their ``atomic`` blocks become savepoints) and their ``on_commit``
publishes and tasks fire after that one commit.

A request holds its key with a transaction-scoped Postgres advisory lock, taken without
waiting: a concurrent retry is a 409 at once rather than a connection blocked on the first
request, and the lock goes with the first request's transaction however that ends.
"""

from __future__ import annotations

import hashlib
import json
import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import wraps
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from agentsite.errors import Conflict, InvalidInput, ServiceError
from agentsite.models import IdempotencyKey
from agentsite.request_transaction import own_savepoints

HEADER = "Idempotency-Key"
KEEP_SECONDS = 24 * 3600
# A key's row commits with its answer (one transaction), so a row with no answer (status
# null) comes only from a deployment that committed keys apart from their requests: it
# blocks its key this long, then it is taken over. This path can go once no such row is
# younger than KEEP_SECONDS.
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


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _lock_id(user_id: int, hashed: str) -> int:
    # 64 bits of the user and key: a collision only answers a 409 to an unrelated request
    # that overlaps in time.
    digest = hashlib.sha256(f"idempotency {user_id} {hashed}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def hold(user_id: int, hashed: str, fp: str, now: datetime) -> IdempotencyKey | None | Response:
    """Inside the request's transaction: take the key until that transaction ends, or answer
    for it (a replay; a 409 or 422 raised). Returns the stored row to overwrite (expired, or
    abandoned before this scheme) or None (a new key)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s::bigint)", [_lock_id(user_id, hashed)])
        (locked,) = cursor.fetchone()
    if not locked:
        raise Conflict(f"a request with this {HEADER} is still in progress",
                       code="idempotency_in_progress")
    row = (IdempotencyKey.objects.select_for_update()
           .filter(user_id=user_id, key_hash=hashed).first())
    if row is None:
        return None
    age = (now - row.claimed_at).total_seconds()
    if age > KEEP_SECONDS or (row.status is None and age > IN_PROGRESS_SECONDS):
        return row
    if row.fingerprint != fp:
        raise ServiceError(f"this {HEADER} was used with a different request body",
                           code="idempotency_key_reused", status=422)
    if row.status is None:
        raise Conflict(f"a request with this {HEADER} is still in progress",
                       code="idempotency_in_progress")
    return Response(row.body, status=row.status, headers={"Idempotent-Replayed": "true"})


def store(row: IdempotencyKey | None, *, user_id: int, hashed: str, fp: str, now: datetime,
          response: Response) -> None:
    """Inside the request's transaction, with the key held: record its answer."""
    body = json.loads(json.dumps(response.data, cls=JSONEncoder))
    if row is None:
        IdempotencyKey.objects.create(user_id=user_id, key_hash=hashed, fingerprint=fp,
                                      token=uuid.uuid4(), status=response.status_code,
                                      body=body, claimed_at=now)
        return
    row.fingerprint, row.token, row.claimed_at = fp, uuid.uuid4(), now
    row.status, row.body = response.status_code, body
    row.save(update_fields=["fingerprint", "token", "claimed_at", "status", "body"])


def idempotent(view: Callable[..., Response]) -> Callable[..., Response]:
    """Decorate a DRF view method (POST) to honour the Idempotency-Key header."""

    @wraps(view)
    def wrapper(self: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if key is None:
            return view(self, request, *args, **kwargs)
        _check_key(key)
        # Parses the body first: bad JSON is a 400 here and takes no key.
        fp = fingerprint(request.method, request.path, request.data)
        user_id, hashed, now = request.user.pk, key_hash(key), timezone.now()
        if random.random() < 0.01:  # keep the table to about a day of keys
            IdempotencyKey.objects.filter(claimed_at__lt=now - timedelta(seconds=KEEP_SECONDS),
                                          status__isnull=False).delete()
        # Its own savepoints for the services: an error answer is stored after them.
        with transaction.atomic(), own_savepoints():
            row = hold(user_id, hashed, fp, now)
            if isinstance(row, Response):
                return row
            try:
                response = view(self, request, *args, **kwargs)
            except DatabaseError as exc:
                # The transaction may be unusable: keep nothing, the retry runs anew.
                transaction.set_rollback(True)
                return self.handle_exception(exc)
            except Exception as exc:  # noqa: BLE001 - errors are answers too, and are replayed
                response = self.handle_exception(exc)
            if response.status_code >= 500:
                transaction.set_rollback(True)  # nothing kept: the retry runs anew
                return response
            store(row, user_id=user_id, hashed=hashed, fp=fp, now=now, response=response)
        return response

    return wrapper
