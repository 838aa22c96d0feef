"""Brute force on the sign-in page, the admin login and password reset: locked out per
user and per address (django-axes; our limiter for reset) with 429, Retry-After and a
clear message; every failure, success and lockout audited; an admin can unlock; the right
user gets in after the window. Small limits of their own (``override_settings``)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core import mail
from django.core.management import call_command
from django.db.models import F
from django.test import Client, override_settings

from agentsite.models import SecurityEvent
from tests.accounts import make_superuser, make_user
from tests.security.test_request_limits import WINDOW, fresh_window, new_address

pytestmark = pytest.mark.django_db
SMALL = {"AXES_FAILURE_LIMIT": 3, "AXES_COOLOFF_TIME": timedelta(seconds=30)}
PAGES = {"sign-in": "/accounts/login/", "admin": "/admin/login/"}


@pytest.fixture
def demo():
    return make_superuser("demo", "demo@example.com", "demo-pw")


def _login(path: str, username: str, password: str, address: str):
    return Client(REMOTE_ADDR=address).post(path, {"username": username, "password": password})


def _kinds() -> list[str]:
    return list(SecurityEvent.objects.order_by("id").values_list("kind", flat=True))


@pytest.mark.parametrize("page", PAGES)
@override_settings(**SMALL)
def test_wrong_passwords_lock_the_user_out_then_the_window_ends(demo, page):
    path, address = PAGES[page], new_address()
    assert [_login(path, "demo", "guess", address).status_code for _ in range(2)] == [200, 200]
    locked = _login(path, "demo", "guess", address)
    assert locked.status_code == 429 and locked["Retry-After"] == "30"
    assert "Too many failed sign-ins" in locked.content.decode()
    # Locked: the right password does not get in, from anywhere.
    assert _login(path, "demo", "demo-pw", new_address()).status_code == 429
    # Three failures and one refused while locked, each audited with the lockouts.
    assert _kinds().count("login.failed") == 4 and "lockout" in _kinds()
    failed = SecurityEvent.objects.filter(kind="login.failed").order_by("id").first()
    assert (failed.username, failed.ip_address) == ("demo", address)
    # The window ends (its attempts 30 s old, as axes counts them).
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=30))
    assert _login(path, "demo", "demo-pw", address).status_code == 302  # signed in
    assert _kinds()[-1] == "login"


@override_settings(AXES_FAILURE_LIMIT=3, AXES_COOLOFF_TIME=timedelta(hours=1))
def test_one_address_guessing_many_users_is_locked_out(demo):
    address = new_address()
    make_user("ada", "ada@example.com", "ada-pw")
    statuses = [_login("/accounts/login/", name, "guess", address).status_code
                for name in ("x1", "x2", "x3")]
    assert statuses == [200, 200, 429]
    assert _login("/accounts/login/", "ada", "ada-pw", address).status_code == 429
    assert _login("/accounts/login/", "ada", "ada-pw", new_address()).status_code == 302


@override_settings(AXES_FAILURE_LIMIT=3, AXES_COOLOFF_TIME=timedelta(hours=1))
def test_an_admin_unlocks_and_it_is_audited(demo):
    make_user("ada", "ada@example.com", "ada-pw")
    address = new_address()
    for _ in range(3):
        _login("/accounts/login/", "ada", "guess", address)
    assert _login("/accounts/login/", "ada", "ada-pw", address).status_code == 429
    admin = Client()
    admin.force_login(demo)
    attempts = list(AccessAttempt.objects.values_list("pk", flat=True))
    response = admin.post("/admin/axes/accessattempt/", {
        "action": "delete_selected", "_selected_action": attempts, "post": "yes"})
    assert response.status_code == 302
    assert _login("/accounts/login/", "ada", "ada-pw", address).status_code == 302
    unlock = SecurityEvent.objects.get(kind="unlock")
    assert (unlock.username, unlock.actor_label) == ("ada", "demo")


@override_settings(AXES_FAILURE_LIMIT=3, AXES_COOLOFF_TIME=timedelta(hours=1))
def test_the_axes_command_unlocks_too(demo):
    address = new_address()
    for _ in range(3):
        _login("/accounts/login/", "demo", "guess", address)
    call_command("axes_reset_username", "demo")
    assert _login("/accounts/login/", "demo", "demo-pw", address).status_code == 302
    assert "unlock" in _kinds()


@override_settings(THROTTLE_PASSWORD_RESET_RATE=f"2/{WINDOW}s")
def test_password_reset_requests_are_limited_per_address_and_per_email(demo):
    address, email = new_address(), f"{uuid.uuid4().hex}@example.com"
    fresh_window()
    asks = [Client(REMOTE_ADDR=address).post("/accounts/password_reset/", {"email": email})
            for _ in range(3)]
    assert [a.status_code for a in asks] == [302, 302, 429]
    assert asks[2]["Retry-After"] in {"1", "2"}
    assert "Too many password-reset requests" in asks[2].content.decode()
    # The same e-mail address from elsewhere is limited too; another one is not.
    assert Client(REMOTE_ADDR=new_address()).post(
        "/accounts/password_reset/", {"email": email}).status_code == 429
    assert Client(REMOTE_ADDR=new_address()).post(
        "/accounts/password_reset/", {"email": "demo@example.com"}).status_code == 302
    assert len(mail.outbox) == 1  # demo's; the made-up address gets no mail
    assert _kinds().count("password_reset") == 5
