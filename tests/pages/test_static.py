"""The app serves its own static files (production settings, no collectstatic step)."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("path", ["/static/agentsite/site.css", "/static/agentsite/events.js",
                                  "/static/vendor/htmx/2.0.11/htmx.min.js",
                                  "/static/admin/css/base.css"])
def test_static_files_are_served_with_cache_headers(live, path):
    response = httpx.get(live["base_url"] + path, timeout=10)
    assert response.status_code == 200 and response.content
    assert "max-age=" in response.headers["cache-control"]


def test_a_missing_static_file_is_a_404(live):
    assert httpx.get(live["base_url"] + "/static/agentsite/nope.js", timeout=10).status_code == 404
