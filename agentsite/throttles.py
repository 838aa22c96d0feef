"""Request limits of every door: per token (a session: per user) and per address.

Counted in Redis in fixed windows (``INCR`` + ``EXPIRE`` of ``throttle:<what>:<who>:<n>``,
all of a request's counters in one round trip), so every web process counts together.
DRF's own ``SimpleRateThrottle`` keeps a list of timestamps per client in Django's cache,
read and written whole at each request (600 entries at 600/m): a counter is cheaper.

- ``ApiThrottle``: DRF's throttle class of the REST API and the SSE streams.
- ``throttle_wait(request)``: the same check for doors that are not DRF views (AG-UI, the
  LangGraph API): seconds to wait, or None.
- ``auth_failure``: failed token authentications per address (a made-up token is
  refused before any other limit is counted: 429 instead of 401 once over).
- ``login_locked_out``: django-axes' lockout answer (429, Retry-After, a clear message).

A limit over answers 429 with ``Retry-After`` in the door's error shape. Redis not
answering lets requests through (logged): a limit is no reason to refuse everyone.
"""

from __future__ import annotations

import logging
import math
import time
from functools import cache
from typing import Any

import redis
from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from rest_framework import throttling

from agentsite.client_ip import client_ip
from agentsite.env import parse_rate
from agentsite.models import ApiToken
from agentsite.surfaces import json_surface

log = logging.getLogger(__name__)


@cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def limits_hit(limits: list[tuple[str, str]], *, count: bool = True) -> float | None:
    """Count one hit on each ``(key, rate)``; the seconds until all are under their rate
    again, or None when none is over. ``count=False``: only look."""
    if not limits:
        return None
    now = time.time()
    parsed = [(key, *parse_rate(rate)) for key, rate in limits]
    try:
        pipe = _redis().pipeline(transaction=False)
        for key, _, seconds in parsed:
            window = f"throttle:{key}:{int(now // seconds)}"
            if count:
                pipe.incr(window)
                pipe.expire(window, seconds + 1)  # its window number is in the key
            else:
                pipe.get(window)
        replies = pipe.execute()
    except (redis.RedisError, OSError) as exc:
        log.warning("request limits not counted (Redis): %s", exc)
        return None
    counts = replies[::2] if count else replies
    waits = [seconds - now % seconds for (_, limit, seconds), n in zip(parsed, counts, strict=True)
             if int(n or 0) > limit]
    return max(waits) if waits else None


def retry_after(wait: float) -> str:
    return str(max(1, math.ceil(wait)))


def request_limits(request: Any, user: Any, auth: Any) -> list[tuple[str, str]]:
    """The counters a request counts on: its token (or its user) and its address."""
    limits = []
    if isinstance(auth, ApiToken):
        limits.append((f"token:{auth.pk}", settings.THROTTLE_TOKEN_RATE))
    elif user is not None and getattr(user, "is_authenticated", False):
        limits.append((f"user:{user.pk}", settings.THROTTLE_TOKEN_RATE))
    ip = client_ip(request)
    if ip:
        limits.append((f"addr:{ip}", settings.THROTTLE_ADDRESS_RATE))
    return limits


def throttle_wait(request: Any, user: Any = None, auth: Any = None) -> float | None:
    """For a door that is not a DRF view: count this request; seconds to wait if over."""
    return limits_hit(request_limits(request, user, auth))


class ApiThrottle(throttling.BaseThrottle):
    """DRF: per token (or user) and per address, one Redis round trip."""

    def allow_request(self, request: Any, view: Any) -> bool:
        self.waiting = throttle_wait(request, request.user, request.auth)
        return self.waiting is None

    def wait(self) -> float | None:
        return self.waiting


def auth_failure(request: Any) -> float | None:
    """Count a failed token authentication of this address; seconds to wait if it is
    over ``THROTTLE_AUTH_FAILURE_RATE``, else None."""
    ip = client_ip(request)
    if not ip:
        return None
    return limits_hit([(f"authfail:{ip}", settings.THROTTLE_AUTH_FAILURE_RATE)])


def throttled_response(request: Any, wait: float, what: str = "requests") -> HttpResponse:
    """429 with Retry-After: the API's JSON error shape under its prefixes, a page else."""
    seconds = retry_after(wait)
    detail = f"Too many {what}. Try again in {seconds} seconds."
    if json_surface(request.path):
        response: HttpResponse = JsonResponse({"code": "throttled", "detail": detail},
                                              status=429)
    else:
        response = render(request, "registration/too_many.html",
                          {"detail": detail, "seconds": seconds}, status=429)
    response["Retry-After"] = seconds
    return response


def login_locked_out(request: Any, original_response: Any = None,
                     credentials: Any = None) -> HttpResponse:
    """django-axes' answer to a locked-out login (sign-in page, admin): 429, Retry-After,
    and what to do."""
    seconds = int(settings.AXES_COOLOFF_TIME.total_seconds())
    span = f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
    detail = (f"Too many failed sign-ins for this account or from this address: signing in "
              f"is locked for {span}. An administrator can unlock it sooner.")
    response = render(request, "registration/too_many.html",
                      {"detail": detail, "seconds": seconds}, status=429)
    response["Retry-After"] = str(seconds)
    return response
