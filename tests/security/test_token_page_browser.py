"""The token page in Chromium: reached from the top bar, a token made with a scope is
shown once, works within its scope over the API, and is revoked from the page."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.django_db(transaction=True)


def test_make_use_and_revoke_a_token_in_the_browser(login_as, live, shot):
    page = login_as("owner")
    page.get_by_role("link", name="API tokens").click()
    expect(page.get_by_role("heading", name="API tokens")).to_be_visible()
    page.fill("#id_name", "laptop script")
    page.get_by_label("read: runs, conversations, interrupts, streams").check()
    page.select_option("#id_expires", "7")
    page.get_by_role("button", name="Create token").click()
    shown = page.locator("#new-token code")
    expect(shown).to_be_visible()
    raw = shown.inner_text().strip()
    shot(page, "security-token-created")
    api = httpx.Client(base_url=live["base_url"], headers={"Authorization": f"Token {raw}"})
    assert api.get("/api/runs/").status_code == 200
    refused = api.post("/api/runs/", json={"agent": "dev"})
    assert refused.status_code == 403 and refused.json()["code"] == "insufficient_scope"
    # Listed with its name and scope, never shown again.
    page.goto("/account/tokens/")
    row = page.get_by_role("row", name="laptop script")
    expect(row).to_contain_text("read")
    assert raw not in page.content()
    row.get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("row", name="laptop script")).to_contain_text("revoked")
    shot(page, "security-token-revoked")
    assert api.get("/api/runs/").status_code == 401
    api.close()
