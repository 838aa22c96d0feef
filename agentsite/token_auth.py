"""API tokens: hashed at rest, several per user, named, scoped, expiring, revocable.

The one place every door (REST ``/api/``, AG-UI ``/agui/``, the SSE streams, the
LangGraph API) authenticates a token and checks its scope:

- ``TokenAuthentication``: DRF's authentication class. The token comes in
  ``Authorization: Token <t>`` (or ``Bearer <t>``) or in ``X-Api-Key: <t>`` (the
  LangGraph SDK's header). ``request.auth`` is the ``ApiToken`` row; a session has none.
- ``require_scope(auth, scope)`` / ``token_allows(auth, scope)``: may this credential do
  that? A session (``auth`` not a token) may do all its user may; a token only what its
  scopes allow. Scopes never add permissions: the user's own are checked as well.
- ``TokenScope``: the DRF permission that applies it to every API view (GET needs
  ``read``; a view names the scope of each write in ``token_scopes``). DRF views also get
  the request limits (``agentsite.throttles.ApiThrottle``) from the settings.
- ``door_authenticate(request, scope)``: all of it for a door that is not a DRF view.

Why not a library: DRF's ``authtoken`` keeps one plain-text key per user; django-rest-knox
(5.x) hashes tokens and expires them, but has no names, scopes or last-used time, reads
only ``Authorization``, and deletes expired and logged-out tokens, so the use of a revoked
token could not be told from a made-up one (and audited). What is written here is a
SHA-256 lookup: a token is 256 random bits, so a fast hash is enough (GitHub's practice);
the database holds no usable token.
"""

from __future__ import annotations

import hashlib
import math
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions
from rest_framework.authentication import SessionAuthentication
from rest_framework.parsers import JSONParser
from rest_framework.request import Request

from agentsite.errors import Forbidden, InvalidInput, NotFound, ServiceError
from agentsite.models import ApiToken, SecurityEvent
from agentsite.security_audit import security_event
from agentsite.throttles import auth_failure, retry_after, throttle_wait
from agentsite.token_lookup import token_with_user

Scope = ApiToken.Scope
SCOPES: tuple[str, ...] = tuple(Scope.values)
# What each scope allows besides itself: answering or starting shows what was answered
# or started; ``admin`` is all the user may do.
IMPLIED: dict[str, frozenset[str]] = {
    Scope.ANSWER: frozenset({Scope.READ}),
    Scope.START: frozenset({Scope.READ}),
    Scope.ADMIN: frozenset(SCOPES),
}
# New tokens start with this (secret scanners can look for it); legacy ones are 40 hex.
TOKEN_PREFIX = "ags_"
KEYWORDS = ("Token", "Bearer")
API_KEY_HEADER = "X-Api-Key"
# ``last_used_at`` is written at most this often per token (not a write per request).
LAST_USED_EVERY = timedelta(minutes=1)


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def scopes_parse(value: str | Iterable[str]) -> list[str]:
    """``"read answer"``, ``"read,answer"`` or a list → the scopes, checked and in order."""
    items = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    unknown = [s for s in items if s not in SCOPES]
    if unknown or not items:
        problem = (f"unknown scope {unknown[0]!r}" if unknown else "no scope") + \
            f"; choose from {', '.join(SCOPES)}"
        raise InvalidInput(f"Invalid scope: {problem}.", code="invalid_scope",
                           fields={"scope": [problem]})
    return [s for s in SCOPES if s in items]


def scopes_granted(scopes: Iterable[str]) -> frozenset[str]:
    granted: set[str] = set()
    for scope in scopes:
        granted |= {scope, *IMPLIED.get(scope, ())}
    return frozenset(granted)


def token_issue(*, user: Any, name: str, scopes: str | Iterable[str],
                expires_at: datetime | None = None, actor: Any = None,
                request: Any = None) -> tuple[ApiToken, str]:
    """A new token for ``user``; returns the row and the token itself, which is not
    stored anywhere: show it once."""
    name = (name or "").strip()
    if not name or len(name) > 100:
        raise InvalidInput("A token needs a name of at most 100 characters.",
                           code="invalid_name", fields={"name": ["1 to 100 characters"]})
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("The expiry is in the past.", code="invalid_expiry",
                           fields={"expires_at": ["must be in the future"]})
    scope = " ".join(scopes_parse(scopes))
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(user=user, name=name, scope=scope, expires_at=expires_at,
                                        digest=token_digest(raw), prefix=raw[:12])
        security_event(kind=SecurityEvent.Kind.TOKEN_CREATED, user=user, actor=actor,
                       request=request, token=token.pk, name=name, scope=scope,
                       expires_at=expires_at.isoformat() if expires_at else None)
    return token, raw


def token_revoke(*, token_id: int, actor: Any, owner: Any = None,
                 request: Any = None) -> ApiToken:
    """Revoke a token (``owner``: only one of theirs). Revoking twice changes nothing."""
    with transaction.atomic():
        # Locked: two revokes at once write one audit row (the second finds it revoked).
        found = ApiToken.objects.select_for_update().filter(pk=token_id)
        if owner is not None:
            found = found.filter(user=owner)
        token = found.first()
        if token is None:
            raise NotFound("No such token.", code="unknown_token")
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])  # streams.access: open streams recheck
            security_event(kind=SecurityEvent.Kind.TOKEN_REVOKED, user=token.user_id,
                           username=token.user.get_username(), actor=actor, request=request,
                           token=token.pk, name=token.name)
    return token


def token_allows(auth: Any, scope: str) -> bool:
    """May this credential (``request.auth``) do what ``scope`` covers? A session (no
    token) may do all its user may."""
    if not isinstance(auth, ApiToken):
        return True
    return scope in scopes_granted(auth.scopes)


def require_scope(auth: Any, scope: str) -> None:
    """``Forbidden`` (403, ``insufficient_scope``) unless the credential allows ``scope``:
    for doors that are not DRF views (AG-UI, the LangGraph API)."""
    if not token_allows(auth, scope):
        raise Forbidden(scope_message(auth, scope), code="insufficient_scope",
                        extra={"required_scope": scope})


def scope_message(auth: Any, scope: str) -> str:
    return (f"This token's scope ({auth.scope}) does not allow this: it needs "
            f"{scope!r}.")


def raw_token(request: Any) -> str | None:
    """The token a request carries (``Authorization: Token|Bearer <t>``, else
    ``X-Api-Key``), or None; ``AuthenticationFailed`` for a malformed header."""
    header = authentication.get_authorization_header(request).split()
    if header and header[0].decode(errors="replace").lower() in {k.lower() for k in KEYWORDS}:
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(
                "Invalid token header: give one token after the keyword.")
        try:
            return header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token header.") from None
    key = request.META.get("HTTP_X_API_KEY")
    if key is not None:
        key = key.strip()
        if not key or " " in key:
            raise exceptions.AuthenticationFailed("Invalid X-Api-Key header.")
        return key
    return None


def _refused(request: Any, detail: str, code: str = "authentication_failed") -> Exception:
    """401 for a token refused, or 429 once its address has failed too often
    (``THROTTLE_AUTH_FAILURE_RATE``): counted only on failure, so a good token costs no
    extra round trip."""
    if request is not None:
        wait = auth_failure(request)
        if wait is not None:
            return exceptions.Throttled(wait=math.ceil(wait))
    return exceptions.AuthenticationFailed(detail, code=code)


def token_authenticate(raw: str, request: Any = None) -> tuple[Any, ApiToken]:
    """The user and the token row for a presented token (one query with its user), or
    ``AuthenticationFailed`` (401): unknown, revoked, expired, or the user inactive."""
    token = token_with_user(token_digest(raw))  # plain SQL (agentsite.token_lookup)
    if token is None:
        raise _refused(request, "Invalid token.")
    if token.revoked_at is not None:
        security_event(kind=SecurityEvent.Kind.TOKEN_REVOKED_USED, user=token.user,
                       request=request, token=token.pk, name=token.name)
        raise _refused(request, "Token revoked.", "token_revoked")
    now = timezone.now()
    if token.is_expired(now):
        raise _refused(request, "Token expired.", "token_expired")
    if not token.user.is_active:
        raise _refused(request, "User inactive or deleted.")
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token.user, token


def token_usable(token_id: Any, user_id: Any) -> bool:
    """Is this token still usable by this user (for an open stream's checks)?"""
    token = ApiToken.objects.filter(pk=token_id, user_id=user_id).first()
    return token is not None and token.is_active


class TokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Token <t>`` / ``Bearer <t>`` or ``X-Api-Key: <t>``."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        raw = raw_token(request)
        if raw is None:
            return None
        return token_authenticate(raw, request)

    def authenticate_header(self, request: Request) -> str:
        return "Token"

    def authenticate_credentials(self, key: str, request: Any = None) -> tuple[Any, ApiToken]:
        """DRF's name, for subclasses that read the token elsewhere (``lgapi.http``)."""
        return token_authenticate(key, request)


def required_scope(request: Request, view: Any) -> str:
    """The scope an API request needs: the view's ``token_scopes`` entry for its action
    (or its method), else ``read`` for GET / HEAD / OPTIONS and ``admin`` for any write
    nobody declared (a new endpoint is closed to narrow tokens until it says)."""
    declared = getattr(view, "token_scopes", {})
    action = getattr(view, "action", None)
    if action in declared:
        return declared[action]
    if request.method in permissions.SAFE_METHODS:
        return Scope.READ
    return declared.get(request.method.lower(), Scope.ADMIN)


class TokenScope(permissions.BasePermission):
    """DRF: a token request is refused (403 ``insufficient_scope``) outside its scopes,
    before the view runs (nothing is read, claimed or consumed)."""

    code = "insufficient_scope"

    def has_permission(self, request: Request, view: Any) -> bool:
        scope = required_scope(request, view)
        if token_allows(request.auth, scope):
            return True
        self.message = scope_message(request.auth, scope)
        return False


def door_authenticate(request: Any, scope: str | None = None) -> tuple[Any, Any]:
    """For a door that is not a DRF view (AG-UI, the LangGraph API): the user and the
    token (None for a session) of a Django request, as the API authenticates it (token,
    or session with DRF's CSRF check), counted on the request limits and, with ``scope``,
    checked against the token's scopes. Refusals are ``ServiceError`` with the status
    (401, 403 ``insufficient_scope``, 429 ``throttled`` with ``extra["retry_after"]``
    seconds), for the door to answer in its own shape."""
    # JSONParser: DRF's CSRF check reads request.POST, which needs a parser for the body.
    drf = Request(request, parsers=[JSONParser()],
                  authenticators=[TokenAuthentication(), SessionAuthentication()])
    try:
        user = drf.user
    except exceptions.Throttled as exc:
        raise _throttled(exc.wait or 1) from None
    except exceptions.APIException as exc:
        codes = exc.get_codes()
        raise ServiceError(str(exc.detail), status=exc.status_code,
                           code=codes if isinstance(codes, str) else exc.default_code) from None
    if not user or not user.is_authenticated:
        raise ServiceError("Authentication credentials were not provided.", status=401,
                           code="not_authenticated")
    wait = throttle_wait(request, user, drf.auth)
    if wait is not None:
        raise _throttled(wait)
    if scope is not None:
        require_scope(drf.auth, scope)
    return user, drf.auth


def _throttled(wait: float) -> ServiceError:
    seconds = retry_after(wait)
    return ServiceError(f"Too many requests. Try again in {seconds} seconds.", status=429,
                        code="throttled", extra={"retry_after": int(seconds)})
