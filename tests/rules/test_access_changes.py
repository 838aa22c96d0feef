"""Which account changes tell open streams to check their user's access again
(streams.access), and whom: read from the event store's fan-out, as the web processes
and the edge forwarder read it, once the change commits."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import redis
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.backends.db import SessionStore

from agentsite.models import ApiToken
from agentsite.token_auth import token_issue, token_revoke
from streams.keys import PUBSUB_CHANNEL


@pytest.fixture
def announced(django_capture_on_commit_callbacks) -> Callable[[Callable[[], object]], set]:
    """announced(change) → the user ids whose streams were told, after its commit."""

    def run(change: Callable[[], object]) -> set[str]:
        client = redis.Redis.from_url(settings.REDIS_URL)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(PUBSUB_CHANNEL)
        pubsub.get_message(timeout=1)  # subscribed
        with django_capture_on_commit_callbacks(execute=True):
            change()
        told: set[str] = set()
        while (message := pubsub.get_message(timeout=0.3)) is not None:
            told |= set(json.loads(message["data"]).get("access", ()))
        pubsub.close()
        client.close()
        return told

    return run


def test_each_change_tells_the_users_it_touches(people, announced) -> None:
    decide = Permission.objects.get(codename="decide_interrupt")
    owner, reviewer, second = people["owner"], people["reviewer"], people["second_reviewer"]
    ids = {name: str(user.pk) for name, user in people.items()}
    legal = Group.objects.create(name="legal")
    legal.permissions.add(decide)
    assert announced(lambda: legal.user_set.add(owner, second)) == set()  # gained: nothing

    assert announced(lambda: reviewer.user_permissions.remove(decide)) == {ids["reviewer"]}
    assert announced(lambda: decide.user_set.remove(second)) == {ids["second_reviewer"]}
    assert announced(lambda: legal.permissions.remove(decide)) == {
        ids["owner"], ids["second_reviewer"]}
    legal.permissions.add(decide)
    assert announced(lambda: decide.group_set.clear()) == {ids["owner"], ids["second_reviewer"]}
    assert announced(lambda: owner.groups.clear()) == {ids["owner"]}
    assert announced(lambda: legal.user_set.clear()) == {ids["second_reviewer"]}

    owner.is_active = False
    assert announced(owner.save) == {ids["owner"]}
    assert announced(lambda: owner.save(update_fields=["last_login"])) == set()  # a login
    revoked, _ = token_issue(user=reviewer, name="revoked", scopes="read")
    assert announced(lambda: token_revoke(token_id=revoked.pk, actor=None)) == {ids["reviewer"]}
    token, _ = token_issue(user=reviewer, name="deleted", scopes="read")
    assert announced(ApiToken.objects.get(pk=token.pk).delete) == {ids["reviewer"]}
    session = SessionStore()
    session[SESSION_KEY] = ids["second_reviewer"]
    session.create()
    assert announced(session.delete) == {ids["second_reviewer"]}  # a logout
    outsider_id = ids["outsider"]
    assert announced(people["outsider"].delete) == {outsider_id}
