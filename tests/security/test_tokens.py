"""API tokens: stored hashed, several per user, named, expiring, revocable, last used;
legacy DRF keys migrate; issued by a command, the user's own page and the admin. In
process, on the test database (no worker or server needed)."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.utils import timezone

from agentsite.models import ApiToken, SecurityEvent
from agentsite.token_auth import token_issue, token_revoke
from tests.accounts import make_superuser, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():
    return make_user("owner", "owner@example.com", "pw-owner")


def _get(raw: str | None = None, header: str = "Token", **extra: str) -> tuple[int, dict]:
    headers = {"HTTP_AUTHORIZATION": f"{header} {raw}"} if raw and header else {}
    response = Client(**headers, **extra).get("/api/agents/")
    return response.status_code, response.json()


def test_no_token_is_stored_in_plain_text(owner):
    _, raw = token_issue(user=owner, name="ci", scopes="read")
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM agentsite_apitoken")
        stored = " ".join(str(value) for row in cursor.fetchall() for value in row)
    assert raw.startswith("ags_") and len(raw) > 40
    assert raw not in stored and raw[12:20] not in stored  # the prefix only: 12 characters
    assert _get(raw)[0] == 200


@pytest.mark.parametrize("header", ["Token", "Bearer"])
def test_authorization_and_x_api_key_headers(owner, header):
    _, raw = token_issue(user=owner, name="sdk", scopes="read")
    assert _get(raw, header)[0] == 200
    assert _get(None, HTTP_X_API_KEY=raw)[0] == 200  # the LangGraph SDK's header
    assert _get(None, HTTP_X_API_KEY="ags_made-up")[0] == 401


def test_several_named_tokens_each_revoked_alone(owner):
    ci, ci_raw = token_issue(user=owner, name="ci", scopes="read")
    _, bot_raw = token_issue(user=owner, name="bot", scopes="answer")
    assert sorted(owner.api_tokens.values_list("name", flat=True)) == ["bot", "ci"]
    token_revoke(token_id=ci.pk, actor=owner)
    status, body = _get(ci_raw)
    assert (status, body["code"]) == (401, "token_revoked")
    assert _get(bot_raw)[0] == 200
    # Its use is audited, with the address; a made-up token is not a revoked one.
    used = SecurityEvent.objects.get(kind=SecurityEvent.Kind.TOKEN_REVOKED_USED)
    assert used.user == owner and used.ip_address == "127.0.0.1"
    assert used.detail["token"] == ci.pk
    assert _get("ags_made-up")[0] == 401
    assert SecurityEvent.objects.filter(kind=SecurityEvent.Kind.TOKEN_REVOKED_USED).count() == 1
    # Revoking again changes nothing and audits nothing more.
    token_revoke(token_id=ci.pk, actor=owner)
    assert SecurityEvent.objects.filter(kind=SecurityEvent.Kind.TOKEN_REVOKED).count() == 1


def test_an_expired_token_is_401(owner):
    token, raw = token_issue(user=owner, name="short", scopes="read",
                             expires_at=timezone.now() + timedelta(minutes=5))
    assert _get(raw)[0] == 200
    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    status, body = _get(raw)
    assert (status, body["code"]) == (401, "token_expired")


def test_last_used_is_written_at_most_once_a_minute(owner):
    token, raw = token_issue(user=owner, name="ci", scopes="read")
    assert token.last_used_at is None
    _get(raw)
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    _get(raw)
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first


def test_bad_scope_name_or_expiry_is_refused_clearly(owner):
    from agentsite.errors import InvalidInput

    for kwargs, field in [({"scopes": "read,write"}, "scope"), ({"scopes": ""}, "scope"),
                          ({"scopes": "read", "name": ""}, "name"),
                          ({"scopes": "read", "expires_at": timezone.now()}, "expires_at")]:
        with pytest.raises(InvalidInput) as err:
            token_issue(user=owner, **{"name": "x", **kwargs})
        assert field in err.value.fields
    assert not ApiToken.objects.exists()


def test_legacy_drf_keys_migrate_to_hashed_tokens(owner):
    """The data migration, on a database with DRF's authtoken table."""
    key = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
                       "created timestamptz NOT NULL, user_id integer NOT NULL)")
        cursor.execute("INSERT INTO authtoken_token VALUES (%s, now(), %s)", [key, owner.pk])
    migration = importlib.import_module("agentsite.migrations.0003_legacy_tokens")
    from django.apps import apps

    with connection.schema_editor() as editor:
        migration.hash_legacy_tokens(apps, editor)
    token = ApiToken.objects.get(user=owner)
    assert token.legacy and token.name == "legacy token" and token.digest != key
    assert _get(key)[0] == 200  # the client keeps working
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0  # no plain-text key left


def test_issue_token_takes_a_name_scope_and_expiry(owner, capsys):
    call_command("issue_token", "owner", "--name", "deploy bot", "--scope", "read,answer",
                 "--expires-in", "30d")
    raw = capsys.readouterr().out.strip()
    token = ApiToken.objects.get(user=owner)
    assert (token.name, token.scope) == ("deploy bot", "read answer")
    assert timedelta(days=29) < token.expires_at - timezone.now() <= timedelta(days=30)
    assert _get(raw)[0] == 200
    with pytest.raises(CommandError, match="unknown scope 'write'"):
        call_command("issue_token", "owner", "--scope", "write")
    with pytest.raises(CommandError, match="expires-in"):
        call_command("issue_token", "owner", "--expires-in", "soon")
    call_command("issue_token", "owner", "--revoke", str(token.pk))
    assert _get(raw)[0] == 401


def test_the_users_own_page_creates_shows_once_and_revokes(owner):
    browser = Client()
    browser.force_login(owner)
    made = browser.post("/account/tokens/", {"name": "laptop", "scopes": ["read", "answer"],
                                             "expires": "30"})
    assert made.status_code == 200 and made["Cache-Control"] == "no-store"
    raw = made.context["new_token"]
    assert raw in made.content.decode() and _get(raw)[0] == 200
    listed = browser.get("/account/tokens/").content.decode()
    assert "laptop" in listed and raw not in listed  # shown once
    token = ApiToken.objects.get(user=owner)
    # Someone else cannot revoke it.
    other = Client()
    other.force_login(make_user("outsider", "o@example.com", "pw"))
    other.post(f"/account/tokens/{token.pk}/revoke/")
    assert _get(raw)[0] == 200
    assert browser.post(f"/account/tokens/{token.pk}/revoke/").status_code == 302
    assert _get(raw)[0] == 401
    # Bad input: a clear error, nothing made.
    bad = browser.post("/account/tokens/", {"name": "", "scopes": [], "expires": "30"})
    assert bad.status_code == 400 and "This field is required" in bad.content.decode()
    assert ApiToken.objects.count() == 1
    kinds = list(SecurityEvent.objects.order_by("id").values_list("kind", "actor_label"))
    assert (SecurityEvent.Kind.TOKEN_CREATED, "") in kinds
    assert (SecurityEvent.Kind.TOKEN_REVOKED, "") in kinds


def test_the_admin_creates_shows_once_and_revokes(owner):
    admin = Client()
    admin.force_login(make_superuser("boss", "boss@example.com", "pw"))
    made = admin.post("/admin/agentsite/apitoken/add/", {
        "user": owner.pk, "name": "from admin", "scopes": ["metrics"], "expires_at_0": "",
        "expires_at_1": ""})
    assert made.status_code == 200, made.content.decode()[:2000]
    raw = made.context["raw"]
    token = ApiToken.objects.get(user=owner)
    assert token.scope == "metrics" and raw not in token.digest
    created = SecurityEvent.objects.get(kind=SecurityEvent.Kind.TOKEN_CREATED)
    assert (created.user, created.actor_label) == (owner, "boss")
    admin.post("/admin/agentsite/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None


def test_make_run_prints_a_new_demo_token_and_revokes_the_last(capsys):
    call_command("ensure_demo_user")
    first = capsys.readouterr().out.split("API token: ")[1].strip()
    call_command("ensure_demo_user")
    second = capsys.readouterr().out.split("API token: ")[1].strip()
    assert first != second
    assert _get(first)[0] == 401 and _get(second)[0] == 200
