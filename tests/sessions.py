"""Logged-in browser sessions over plain HTTP (httpx) on the live server: cookies + CSRF."""

from __future__ import annotations

import re
from typing import Any

import httpx


def login(base_url: str, name: str) -> httpx.Client:
    """An httpx client logged in as ``name`` (password ``pw-<name>``) through the login form."""
    client = httpx.Client(base_url=base_url, timeout=60)
    page = client.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    r = client.post("/accounts/login/", data={"username": name, "password": f"pw-{name}",
                                              "csrfmiddlewaretoken": token})
    assert r.status_code == 302 and "sessionid" in client.cookies, r.text[:500]
    return client


def post_form(client: httpx.Client, url: str, data: dict[str, Any],
              headers: dict[str, str] | None = None, **options: Any) -> httpx.Response:
    """A form post as a browser sends it (urlencoded, with the CSRF token)."""
    headers = {**(headers or {}), "X-CSRFToken": client.cookies["csrftoken"]}
    return client.post(url, data=data, headers=headers, **options)
