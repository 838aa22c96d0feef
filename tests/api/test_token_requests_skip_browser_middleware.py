"""A token-authenticated request to an API door goes around the browser's middleware
(sessions, CSRF, the session's user, messages: agentsite.browser_middleware); a browser's
request, and an API request with its session cookie, still takes it (issue 37)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from tests.accounts import make_token, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner():  # noqa: ANN201
    return make_user("owner", "owner@example.com", "pw-owner")


@pytest.mark.parametrize("path", ["/api/runs/", "/agui/dev/connect/",
                                  "/" + settings.LANGGRAPH_API_PREFIX + "info"])
@pytest.mark.parametrize("header", ["HTTP_AUTHORIZATION", "HTTP_X_API_KEY"])
def test_a_token_request_has_no_session(owner, path: str, header: str) -> None:
    raw = make_token(owner)
    client = Client(**{header: f"Token {raw}" if header == "HTTP_AUTHORIZATION" else raw})
    response = client.get(path)
    assert response.status_code != 401, response.content
    assert not hasattr(response.wsgi_request, "session")
    assert "csrftoken" not in response.cookies


def test_a_wrong_token_is_still_refused_not_taken_for_a_session(owner) -> None:
    client = Client()
    client.force_login(owner)
    response = client.get("/api/runs/", HTTP_AUTHORIZATION="Token wrong")
    assert response.status_code == 401
    assert not hasattr(response.wsgi_request, "session")


def test_a_session_request_keeps_the_whole_stack(owner) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    response = client.get("/api/runs/")
    assert response.status_code == 200
    assert hasattr(response.wsgi_request, "session")
    # DRF's session authentication still wants the CSRF token for a write.
    refused = client.post("/api/runs/", {"agent": "dev"}, content_type="application/json")
    assert refused.status_code == 403
    page = client.get("/")
    assert hasattr(page.wsgi_request, "session")
