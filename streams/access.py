"""Open streams hear at once that their user's access may have changed.

A stream checks its user's access when it opens, then every ``STREAM_RECHECK_SECONDS``
(30 s), whether a web process holds it (``streams.sse``) or Pushpin does (``streams.grip``:
its next link). When an account may have lost access, its id goes out on the event
fan-out (``PUBSUB_CHANNEL``, ``{"access": [ids]}``) once the change commits:

- a direct stream of that user checks again now (``streams.follow``: ``RECHECK``);
- the edge forwarder has Pushpin close that user's held streams (each is also on the
  user's channel ``access-<id>``), and their reconnects are checked like any open.

What counts: a user saved other than by a login's ``last_login`` (deactivated, staff or
superuser taken away, or any other edit), deleted, a permission or group taken from a
user, a permission taken from a group, an API token revoked (or deleted), a session
deleted (a logout). A direct stream checks its credential too (the token or session it
was opened with: ``streams.sse``); a held stream's reconnect is authenticated anew. A message lost
(Redis down) only means the periodic check finds it (on a held stream: the user, not the
credential, whose loss then shows at its next reconnect).

Not django-eventstream's ``channel_permission_changed``: it kicks one channel at a time
(a user holds many run channels), only its own listeners (our direct streams are ours),
and publishes from the web process through pubcontrol, without a timeout.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from redis.exceptions import RedisError

from agentsite.models import ApiToken
from streams.keys import PUBSUB_CHANNEL
from streams.publish import redis_client

log = logging.getLogger(__name__)


def access_channel(user_id: object) -> str:
    """The GRIP channel every held stream of the user is also on (without GRIP_PREFIX)."""
    return f"access-{user_id}"


def recheck_on_commit(user_ids: Iterable[object]) -> None:
    """Once the transaction commits, have the users' open streams check their access."""
    ids = sorted({str(pk) for pk in user_ids if pk is not None})
    if ids:
        transaction.on_commit(lambda: _send(ids), robust=True)


def _send(ids: list[str]) -> None:
    try:
        redis_client().publish(PUBSUB_CHANNEL, json.dumps({"access": ids}))
    except (RedisError, OSError) as exc:  # the periodic checks remain
        log.warning("access change of users %s not sent: %s", ids, exc)


def _user_saved(sender: Any, instance: Any, created: bool, update_fields: Any,
                **_: Any) -> None:
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    recheck_on_commit([instance.pk])


def _user_deleted(sender: Any, instance: Any, **_: Any) -> None:
    recheck_on_commit([instance.pk])


def _user_links_changed(sender: Any, instance: Any, action: str, reverse: bool,
                        pk_set: set[Any] | None, field: str, **_: Any) -> None:
    """A user's permissions or groups (``field``), from either side."""
    user_model = get_user_model()
    if action == "post_remove":
        recheck_on_commit((pk_set or ()) if reverse else [instance.pk])
    elif action == "pre_clear":  # who is linked is known only before the clear
        recheck_on_commit(user_model.objects.filter(**{field: instance})
                          .values_list("pk", flat=True) if reverse else [instance.pk])


def _group_permissions_changed(sender: Any, instance: Any, action: str, reverse: bool,
                               pk_set: set[Any] | None, **_: Any) -> None:
    users = get_user_model().objects
    if action == "post_remove":
        found = (users.filter(groups__in=pk_set or ()) if reverse
                 else users.filter(groups=instance))
    elif action == "pre_clear":
        found = (users.filter(groups__permissions=instance) if reverse
                 else users.filter(groups=instance))
    else:
        return
    recheck_on_commit(found.values_list("pk", flat=True).distinct())


def _token_deleted(sender: Any, instance: Any, **_: Any) -> None:
    recheck_on_commit([instance.user_id])


def _token_saved(sender: Any, instance: Any, update_fields: Any, **_: Any) -> None:
    if instance.revoked_at is not None or instance.is_expired():  # revoked, or cut short
        recheck_on_commit([instance.user_id])


def _session_deleted(sender: Any, instance: Any, **_: Any) -> None:
    recheck_on_commit([instance.get_decoded().get(SESSION_KEY)])


def connect() -> None:
    """Connect the receivers (``runs.apps``: every process that can change an account)."""
    user_model = get_user_model()
    uid = "streams.access."
    post_save.connect(_user_saved, sender=user_model, dispatch_uid=uid + "saved")
    post_delete.connect(_user_deleted, sender=user_model, dispatch_uid=uid + "deleted")
    for field in ("user_permissions", "groups"):
        through = getattr(user_model, field).through

        def changed(*args: Any, field: str = field, **kwargs: Any) -> None:
            _user_links_changed(*args, field=field, **kwargs)

        m2m_changed.connect(changed, sender=through, weak=False, dispatch_uid=uid + field)
    m2m_changed.connect(_group_permissions_changed, sender=Group.permissions.through,
                        dispatch_uid=uid + "group_permissions")
    post_delete.connect(_token_deleted, sender=ApiToken, dispatch_uid=uid + "token")
    post_save.connect(_token_saved, sender=ApiToken, dispatch_uid=uid + "token_saved")
    post_delete.connect(_session_deleted, sender=Session, dispatch_uid=uid + "session")
