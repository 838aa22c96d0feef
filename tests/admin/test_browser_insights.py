"""The Insights page in headless Chromium with JavaScript off (it needs none): a
reviewer opens it from the admin index, narrows it by agent, and sees the seeded figures
and both charts."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.accounts import make_superuser
from tests.insights_rows import seed


def test_a_reviewer_reads_the_insights(login_as, shot, users, live):
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    days = seed(users["owner"], users["reviewer"], make_superuser("boss"))
    page = login_as("reviewer", javascript=False, viewport={"width": 1400, "height": 1000})
    page.goto("/admin/")
    page.locator("#insights-index-link").click()
    page.locator("#id_start").fill(days["start"].isoformat())
    page.locator("#id_end").fill(days["today"].isoformat())
    page.locator("#insights-filters input[type=submit]").click()
    expect(page.locator("#insights-deadlines")).to_contain_text("raised10")
    expect(page.locator("#insights-time_by_agent")).to_contain_text("46.0")
    expect(page.locator("#insights-decisions_per_tool")).to_contain_text("send_email")
    expect(page.locator("#insights-usage_by_model")).to_contain_text("unknown")
    expect(page.locator("svg.insights-chart")).to_have_count(2)
    expect(page.locator("#insights-backlog-chart polyline")).to_have_count(1)
    expect(page.locator("#insights-time_by_agent caption a")).to_have_text("CSV")
    shot(page, "admin-insights")

    page.locator("#id_agent").select_option("a2")
    page.locator("#insights-filters input[type=submit]").click()
    expect(page.locator("#insights-time_by_agent tbody tr")).to_have_count(1)
    expect(page.locator("#insights-time_by_agent")).to_contain_text("96.0")
