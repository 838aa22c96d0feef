"""/metrics is read by a reviewer's token with the ``metrics`` scope, or from an address
in METRICS_ALLOW; anyone else is refused (401 without a credential, 403 otherwise)."""

from __future__ import annotations

import httpx
import pytest
from django.test import RequestFactory, override_settings

from observability.endpoint import metrics_view
from tests.accounts import make_token

pytestmark = pytest.mark.django_db(transaction=True)


def get(live, token: str | None = None, **headers: str) -> httpx.Response:
    if token:
        headers["Authorization"] = f"Token {token}"
    return httpx.get(f"{live['base_url']}/metrics", headers=headers, timeout=30)


def test_only_a_reviewers_metrics_token_reads_it(live, users):
    assert get(live, users["reviewer_token"]).status_code == 200  # admin scope: all
    narrow = make_token(users["reviewer"], scopes="metrics", name="scraper")
    ok = get(live, narrow)
    assert ok.status_code == 200 and "agentsite_interrupts_pending" in ok.text
    # Scopes add no permission: the owner and an outsider are no reviewers.
    for who in ("owner", "outsider"):
        refused = get(live, users[f"{who}_token"])
        assert refused.status_code == 403, refused.text
        assert refused.json()["code"] == "permission_denied"
    # A reviewer's token without the scope.
    read_only = get(live, make_token(users["reviewer"], scopes="read answer", name="r"))
    assert read_only.status_code == 403 and read_only.json()["code"] == "insufficient_scope"
    anonymous = get(live)
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"] == "Token"
    assert get(live, "ags_not-a-token").status_code == 401
    assert "agentsite_" not in anonymous.text


def test_an_allowed_address_reads_it_without_a_token(transactional_db):
    factory = RequestFactory()
    with override_settings(METRICS_ALLOW=["10.0.0.0/8"]):
        allowed = metrics_view(factory.get("/metrics", REMOTE_ADDR="10.1.2.3"))
        refused = metrics_view(factory.get("/metrics", REMOTE_ADDR="192.0.2.1"))
    assert allowed.status_code == 200 and b"agentsite_celery_queue_depth" in allowed.content
    assert refused.status_code == 401
