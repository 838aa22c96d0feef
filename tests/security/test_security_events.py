"""Security events are audited: permission and group changes from either side, staff /
superuser / active flags, with who made them when an admin did; the rows are
append-only. (Logins, lockouts and tokens: test_login_lockout.py, test_tokens.py.)"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client

from agentsite.client_ip import client_ip
from agentsite.models import SecurityEvent
from tests.accounts import make_superuser, make_user

pytestmark = pytest.mark.django_db


def _events(kind: str) -> list[tuple[str, str, dict]]:
    return [(e.username, e.actor_label, e.detail)
            for e in SecurityEvent.objects.filter(kind=kind).order_by("id")]


def test_permission_and_group_changes_from_either_side():
    ada = make_user("ada", "ada@example.com", "pw")
    reviewers = Group.objects.create(name="reviewers")
    decide = Permission.objects.get(codename="decide_interrupt")
    ada.groups.add(reviewers)
    reviewers.user_set.remove(ada)
    ada.user_permissions.add(decide)
    ada.user_permissions.clear()
    reviewers.permissions.add(decide)
    assert _events("groups") == [("ada", "", {"added": ["reviewers"]}),
                                 ("ada", "", {"removed": ["reviewers"]})]
    name = str(decide)
    assert _events("permissions") == [("ada", "", {"added": [name]}),
                                      ("ada", "", {"removed": [name]}),
                                      ("", "", {"group": "reviewers", "added": [name]})]


def test_flags_but_not_logins_are_audited():
    ada = make_user("ada", "ada@example.com", "pw")
    ada.is_staff = True
    ada.save()
    ada.save(update_fields=["last_login"])  # what a login writes: nothing to audit
    ada.first_name = "Ada"
    ada.save()  # no watched field changed
    assert _events("staff") == [("ada", "", {"is_staff": True})]


def test_an_admins_change_names_the_admin():
    boss = make_superuser("boss", "boss@example.com", "pw")
    ada = make_user("ada", "ada@example.com", "pw")
    reviewers = Group.objects.create(name="reviewers")
    admin = Client()
    admin.force_login(boss)
    response = admin.post(f"/admin/auth/user/{ada.pk}/change/", {
        "username": "ada", "email": "ada@example.com", "is_active": "on", "is_staff": "on",
        "groups": [reviewers.pk], "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"})
    assert response.status_code == 302, response.content.decode()[:3000]
    assert _events("groups") == [("ada", "boss", {"added": ["reviewers"]})]
    assert _events("staff") == [("ada", "boss", {"is_staff": True})]


def test_security_events_are_append_only():
    event = SecurityEvent.objects.create(kind="login", username="ada")
    with pytest.raises(ValueError, match="append-only"):
        event.save()
    with pytest.raises(ValueError, match="append-only"):
        event.delete()


@pytest.mark.parametrize("meta, count, expected", [
    ({"REMOTE_ADDR": "10.0.0.9"}, 0, "10.0.0.9"),
    ({"REMOTE_ADDR": "10.0.0.9", "HTTP_X_FORWARDED_FOR": "6.6.6.6"}, 0, "10.0.0.9"),
    # Two proxies each appended: the client is 2 from the end; a claim before it is ignored.
    ({"REMOTE_ADDR": "10.0.0.9", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 8.8.4.4, 10.0.0.2"}, 2,
     "8.8.4.4"),
    ({"REMOTE_ADDR": "10.0.0.9", "HTTP_X_FORWARDED_FOR": "8.8.4.4"}, 2, "8.8.4.4"),
    ({"REMOTE_ADDR": "10.0.0.9", "HTTP_X_FORWARDED_FOR": "junk, 10.0.0.2"}, 2, "10.0.0.9"),
    ({"REMOTE_ADDR": "/run/uvicorn.sock"}, 0, None),
])
def test_the_client_address_behind_trusted_proxies(settings, meta, count, expected):
    settings.TRUSTED_PROXY_COUNT = count

    class Request:
        META = meta

    assert client_ip(Request()) == expected
