"""Security events, one append-only row each (``agentsite.models.SecurityEvent``).

Written by ``security_event`` from the token services and by the receivers connected here
(``connect``, from ``agentsite.apps``): logins and failed logins (Django's signals),
lockouts (django-axes' signal), password-reset requests, and changes to a user's
permissions, groups and staff / superuser / active flags. Who made a change in a request
(an admin) comes from ``RequestActorMiddleware``.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.http import HttpRequest
from django.urls import reverse

from agentsite.client_ip import client_ip
from agentsite.models import SecurityEvent

log = logging.getLogger("agentsite.security")
_request: contextvars.ContextVar[Any] = contextvars.ContextVar("security_request", default=None)
# User fields whose change is audited (pre_save keeps the old values, post_save compares).
WATCHED_FIELDS = ("is_active", "is_staff", "is_superuser")


def _label(who: Any) -> str:
    if who is None or not getattr(who, "is_authenticated", False):
        return ""
    return who.get_username()


def security_event(*, kind: str, user: Any = None, username: str = "", actor: Any = None,
                   request: Any = None, **detail: Any) -> SecurityEvent:
    """Record one security event. ``user``: whom it is about (a user or its id);
    ``actor``: who did it, when not that user (default: the request's user)."""
    request = request if request is not None else _request.get()
    if actor is None and isinstance(request, HttpRequest):
        # Django's request only: a DRF request's user would authenticate again.
        actor = getattr(request, "user", None)
    user_id = getattr(user, "pk", user)
    if not username and user is not None and hasattr(user, "get_username"):
        username = user.get_username()
    event = SecurityEvent.objects.create(
        kind=kind, user_id=user_id, username=username[:150],
        actor_label=_label(actor)[:150] if _label(actor) != username else "",
        ip_address=client_ip(request) if request is not None else None,
        detail={k: v for k, v in detail.items() if v is not None})
    log.info("security %s user=%s actor=%s ip=%s %s", kind, username, event.actor_label,
             event.ip_address, event.detail)
    return event


class RequestActorMiddleware:
    """Makes the request known to the receivers below (who changed a user's groups)."""

    # Both: under ASGI it stays on the event loop (agentsite.loop_middleware says why);
    # the context variable reaches the request's thread with the context asgiref copies.
    sync_capable = async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if self.is_async:
            return self._acall(request)
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)

    async def _acall(self, request: Any) -> Any:
        token = _request.set(request)
        try:
            return await self.get_response(request)
        finally:
            _request.reset(token)


def _logged_in(sender: Any, request: Any, user: Any, **_: Any) -> None:
    security_event(kind=SecurityEvent.Kind.LOGIN, user=user, actor=user, request=request,
                   path=getattr(request, "path", None))


def _logged_out(sender: Any, request: Any, user: Any, **_: Any) -> None:
    if user is not None:
        security_event(kind=SecurityEvent.Kind.LOGOUT, user=user, actor=user, request=request)


def _login_failed(sender: Any, credentials: dict, request: Any = None, **_: Any) -> None:
    username = str(credentials.get("username") or "")[:150]
    user = get_user_model().objects.filter(username=username).only("pk").first()
    security_event(kind=SecurityEvent.Kind.LOGIN_FAILED, user=user, username=username,
                   actor=None, request=request, path=getattr(request, "path", None))


def _locked_out(sender: Any, request: Any, username: str | None = None,
                ip_address: str | None = None, **_: Any) -> None:
    user = get_user_model().objects.filter(username=username or "").only("pk").first()
    security_event(kind=SecurityEvent.Kind.LOCKOUT, user=user, username=username or "",
                   actor=None, request=request, path=getattr(request, "path", None))


def _links_changed(field: str) -> Callable[..., None]:
    kind = SecurityEvent.Kind.PERMISSIONS if field == "user_permissions" else \
        SecurityEvent.Kind.GROUPS
    model = Permission if field == "user_permissions" else Group

    def changed(sender: Any, instance: Any, action: str, reverse: bool,
                pk_set: set[Any] | None, **_: Any) -> None:
        if action not in ("post_add", "post_remove", "pre_clear"):
            return
        users = get_user_model().objects
        if reverse:  # group.user_set.add(...): instance is the group / permission
            targets = list(users.filter(pk__in=pk_set or ())) if action != "pre_clear" \
                else list(instance.user_set.all())
            names = [str(instance)]
        else:
            targets = [instance]
            names = ([str(o) for o in model.objects.filter(pk__in=pk_set or ())]
                     if action != "pre_clear" else [str(o) for o in getattr(instance, field).all()])
        change = {"post_add": "added", "post_remove": "removed", "pre_clear": "removed"}[action]
        for user in targets:
            security_event(kind=kind, user=user, actor=None, **{change: sorted(names)})
    return changed


def _group_permissions_changed(sender: Any, instance: Any, action: str, reverse: bool,
                               pk_set: set[Any] | None, **_: Any) -> None:
    if action not in ("post_add", "post_remove", "pre_clear") or reverse:
        return
    names = (sorted(str(p) for p in Permission.objects.filter(pk__in=pk_set or ()))
             if action != "pre_clear" else sorted(str(p) for p in instance.permissions.all()))
    change = "added" if action == "post_add" else "removed"
    security_event(kind=SecurityEvent.Kind.PERMISSIONS, group=instance.name,
                   **{change: names})


def _attempt_deleted(sender: Any, instance: Any, **_: Any) -> None:
    """An admin (Axes → Access attempts) or ``axes_reset*`` unlocking a locked-out login.
    Not a success clearing earlier failures, nor a cool-off ending (both during a login)."""
    request = _request.get()
    if instance.failures_since_start < settings.AXES_FAILURE_LIMIT:
        return
    if request is not None and not request.path.startswith(
            reverse("admin:axes_accessattempt_changelist")):
        return  # a login's own clean-up (an expired lockout), not an unlock
    user = get_user_model().objects.filter(username=instance.username or "").first()
    security_event(kind=SecurityEvent.Kind.UNLOCK, user=user, username=instance.username or "",
                   address=instance.ip_address)


# A user's watched fields as they were before a save in progress, by the instance's id.
_before: dict[int, dict[str, Any]] = {}


def _user_pre_save(sender: Any, instance: Any, update_fields: Any = None, **_: Any) -> None:
    if instance.pk is None or (update_fields is not None
                               and not set(update_fields) & set(WATCHED_FIELDS)):
        return  # a new user, or a save that cannot change them (a login's last_login)
    before = sender.objects.filter(pk=instance.pk).values(*WATCHED_FIELDS).first()
    if before is not None:
        _before[id(instance)] = before


def _user_post_save(sender: Any, instance: Any, created: bool, **_: Any) -> None:
    before = _before.pop(id(instance), None)
    if created or before is None:
        return
    changed = {f: getattr(instance, f) for f in WATCHED_FIELDS
               if before[f] != getattr(instance, f)}
    if changed:
        security_event(kind=SecurityEvent.Kind.STAFF, user=instance, actor=None, **changed)


def connect() -> None:
    uid = "agentsite.security_audit."
    user_model = get_user_model()
    user_logged_in.connect(_logged_in, dispatch_uid=uid + "login")
    user_logged_out.connect(_logged_out, dispatch_uid=uid + "logout")
    user_login_failed.connect(_login_failed, dispatch_uid=uid + "login_failed")
    from axes.signals import user_locked_out

    user_locked_out.connect(_locked_out, dispatch_uid=uid + "locked_out")
    from axes.models import AccessAttempt

    post_delete.connect(_attempt_deleted, sender=AccessAttempt, dispatch_uid=uid + "unlock")
    for field in ("user_permissions", "groups"):
        m2m_changed.connect(_links_changed(field), sender=getattr(user_model, field).through,
                            weak=False, dispatch_uid=uid + field)
    m2m_changed.connect(_group_permissions_changed, sender=Group.permissions.through,
                        dispatch_uid=uid + "group_permissions")
    pre_save.connect(_user_pre_save, sender=user_model, dispatch_uid=uid + "pre_save")
    post_save.connect(_user_post_save, sender=user_model, dispatch_uid=uid + "post_save")
