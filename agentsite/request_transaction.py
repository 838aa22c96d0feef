"""One transaction for a whole write request: authentication, the service, the answer.

A door opens it (``request_transaction``) around a request that changes something; the
services inside join it without a savepoint (``service_atomic``), two statements fewer
each: a service that fails inside it marks the whole request's transaction for rollback,
which is what a refused request means (nothing it did is kept). A refusal raised after
the service committed its part (an expired question, 410) leaves the transaction
committed. Anyone who catches a service's error and goes on writing in the same
transaction (``agentsite.idempotency`` stores the error answer) opens ``own_savepoints``
first, so the service's failure rolls back to its own savepoint again.

What the request reads from Redis before its service (the request limits' counters, the
AG-UI event counter) runs inside the transaction too, before any row is locked: the
transaction holds no lock while it waits on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import connection, transaction

from agentsite.errors import ServiceError

_joined: ContextVar[bool] = ContextVar("agentsite_request_transaction", default=False)


@contextmanager
def request_transaction(
        refusals: tuple[type[Exception], ...] = (ServiceError,)) -> Iterator[None]:
    """The request's one transaction. A refusal (``refusals``: a door's own error type
    may join ``ServiceError``) leaves it as the service left it (rolled back if the
    service failed inside its block, committed if the service had finished its part),
    then goes on to the caller; any other error rolls it back."""
    refused: Exception | None = None
    with transaction.atomic():
        token = _joined.set(True)
        try:
            yield
        except refusals as err:
            refused = err
        finally:
            _joined.reset(token)
    if refused is not None:
        raise refused


@contextmanager
def own_savepoints() -> Iterator[None]:
    """Inside a request transaction: services nested in this block keep their savepoints
    (the caller handles their errors and writes on)."""
    token = _joined.set(False)
    try:
        yield
    finally:
        _joined.reset(token)


def service_atomic() -> Any:
    """``transaction.atomic()`` for a service: inside a request's transaction, joined to it
    without a savepoint (see the module's docstring for why that is safe there)."""
    if _joined.get() and connection.in_atomic_block:
        return transaction.atomic(savepoint=False)
    return transaction.atomic()
