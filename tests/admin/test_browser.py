"""The admin queue in headless Chromium, against the live server and worker."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers import start_run, wait_run

QUEUE = "/admin/hitl/agentinterrupt/"


@pytest.fixture
def admin_session(login_as):
    """admin_session("reviewer") → a page of its own session, logged in, on /admin/."""
    def open_admin(name: str):
        page = login_as(name, viewport={"width": 1400, "height": 900})
        page.goto("/admin/")
        return page

    return open_admin


@pytest.fixture
def reviewers(users):
    """The suite's reviewer as staff, and a second reviewer (the "third session")."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    second = get_user_model().objects.create_user("second", password="pw-second",
                                                  is_staff=True)
    second.user_permissions.add(Permission.objects.get(codename="decide_interrupt"))
    return users


def _pending(client, run_id: str) -> dict:
    run = wait_run(client, run_id, "paused")
    assert len(run["pending_interrupts"]) == 1, run
    return run["pending_interrupts"][0]


def _answer(page, kind: str) -> None:
    """Fill and submit the card of one kind the way a reviewer would."""
    form = page.locator("form[data-interrupt-id]")
    if kind == "input":
        form.get_by_label("Your answer").fill("v2.0")
        form.get_by_role("button", name="Send").click()
    elif kind == "select":
        form.get_by_label("beta").check()
        form.get_by_role("button", name="Choose").click()
    elif kind == "multiSelect":
        form.get_by_label("linux").check()
        form.get_by_label("macos").check()
        form.get_by_role("button", name="Confirm").click()
    elif kind == "modal":
        form.get_by_role("button", name="Continue").click()
    elif kind == "unlock":
        form.get_by_role("button", name="Unlock").click()
    elif kind == "review":
        form.get_by_text("Edit the proposal").click()
        form.get_by_label("Title").fill("Release 2")
        form.get_by_role("button", name="Save edits").click()
    elif kind == "approval":
        form.get_by_role("button", name="Approve").click()


def test_every_kind_is_decided_from_its_admin_page(api, reviewers, admin_session, shot):
    owner = api("owner")
    run_id = start_run(owner, agent="showcase")["id"]
    page = admin_session("reviewer")
    seen = []
    for kind in ("input", "select", "multiSelect", "modal", "unlock", "review", "approval"):
        item = _pending(owner, run_id)
        assert item["kind"] == kind, item
        page.goto(f"{QUEUE}{item['id']}/change/?_after=queue")
        expect(page.locator(f"form[data-interrupt-id='{item['interrupt_id']}']")).to_be_visible()
        shot(page, f"admin-decide-{kind}")
        _answer(page, kind)
        page.wait_for_url(f"**{QUEUE}")
        expect(page.locator(".messagelist")).to_contain_text("Answered")
        seen.append(kind)
    assert wait_run(owner, run_id, "completed")["status"] == "completed"
    from hitl.models import AgentInterrupt
    from runs.models import AuditLog

    rows = {r.kind: r for r in AgentInterrupt.objects.filter(run_id=run_id)}
    assert sorted(rows) == sorted(seen)
    assert {r.decided_by.username for r in rows.values()} == {"reviewer"}
    assert rows["input"].decision == {"value": "v2.0"}
    assert rows["select"].decision == {"value": "beta"}
    assert rows["multiSelect"].decision == {"values": ["linux", "macos"]}
    assert rows["modal"].decision == {"action": "continue"}
    assert rows["review"].decision["edited"]["title"] == "Release 2"
    assert rows["approval"].decision == {"approved": True}
    decisions = AuditLog.objects.filter(run_id=run_id, action="decision")
    assert set(decisions.values_list("surface", flat=True)) == {"admin"}
    # The decided review reads back: the original beside the edited version.
    page.goto(f"{QUEUE}{rows['review'].pk}/change/")
    expect(page.locator("#edit-original")).to_contain_text('"Release"')
    expect(page.locator("#edit-edited")).to_contain_text('"Release 2"')
    expect(page.locator("form[data-interrupt-id]")).to_have_count(0)
    shot(page, "admin-decided-review")


def test_queue_and_decide_page_follow_other_sessions(api, reviewers, admin_session, shot):
    queue = admin_session("reviewer")
    queue.goto(QUEUE)
    expect(queue.locator("#queue-live")).to_have_attribute("data-live", "open")
    expect(queue.locator("#result_list")).to_have_count(0)
    shot(queue, "admin-queue-empty")

    # Another user's run pauses: its row appears without a reload.
    owner = api("owner")
    run_id = start_run(owner, agent="dev", input={"topic": "the launch"})["id"]
    item = _pending(owner, run_id)
    row = queue.locator(f"#result_list tbody tr:has(a[href*='{item['id']}'])")
    expect(row).to_have_count(1, timeout=15_000)
    expect(row).to_contain_text("owner")
    expect(queue.locator("#queue-count")).to_contain_text("1 waiting")
    shot(queue, "admin-queue-live-row")

    # The reviewer opens its decide page in a second tab ...
    decide = queue.context.new_page()
    decide.goto(f"{QUEUE}{item['id']}/change/")
    expect(decide.locator("#decide-live")).to_have_attribute("data-live", "open")

    # ... and a third session answers it first: the row leaves, the open form closes.
    third = admin_session("second")
    third.goto(f"{QUEUE}{item['id']}/change/?_after=queue")
    third.locator("form[data-interrupt-id]").get_by_label("Your answer").fill("Apollo")
    third.locator("form[data-interrupt-id]").get_by_role("button", name="Send").click()
    third.wait_for_url(f"**{QUEUE}")

    expect(row).to_have_count(0, timeout=15_000)
    expect(decide.locator("#decide-live")).to_contain_text("by second", timeout=15_000)
    expect(decide.locator("form[data-interrupt-id] button").first).to_be_disabled()
    shot(decide, "admin-decide-taken")

    # The run went on to its next question, which the queue shows in turn; cancelling the
    # run takes it away again and the counts follow.
    following = _pending(owner, run_id)
    expect(queue.locator(f"#result_list a[href*='{following['id']}']")).to_have_count(
        1, timeout=15_000)
    shot(queue, "admin-queue-next-question")
    owner.post(f"/api/runs/{run_id}/cancel/")
    expect(queue.locator("#result_list")).to_have_count(0, timeout=15_000)
    expect(queue.locator("#queue-count")).to_contain_text("0 waiting")


def test_run_page_shows_timeline_and_cancels(api, reviewers, admin_session, shot):
    owner = api("owner")
    run_id = start_run(owner, agent="dev", input={"topic": "x"})["id"]
    item = _pending(owner, run_id)
    owner.post(f"/api/runs/{run_id}/resume/", json={"interrupt_id": item["interrupt_id"],
                                                    "payload": {"value": "Apollo"}})
    _pending(owner, run_id)
    from django.contrib.auth.models import Permission

    reviewers["owner"].is_staff = True
    reviewers["owner"].save(update_fields=["is_staff"])
    reviewers["owner"].user_permissions.add(Permission.objects.get(codename="view_agentrun"))
    page = admin_session("owner")
    page.goto(f"/admin/runs/agentrun/{run_id}/change/")
    timeline = page.locator("#run-timeline")
    expect(timeline).to_contain_text("Segment 1")
    expect(timeline).to_contain_text("Segment 2")
    expect(timeline.locator(".queue-timeline-interrupt")).to_have_count(2)
    expect(timeline).to_contain_text("Apollo")
    shot(page, "admin-run-timeline")
    page.click("#cancel-run")
    expect(page.locator("#content")).to_contain_text("Cancel the")
    page.click("#confirm-cancel")
    expect(page.locator(".messagelist")).to_contain_text("cancelled")
    assert wait_run(owner, run_id, "cancelled")["status"] == "cancelled"


def test_bulk_reject_asks_one_reason(api, reviewers, admin_session, shot):
    owner = api("owner")
    run_id = start_run(owner, agent="approvals")["id"]
    run = wait_run(owner, run_id, "paused")
    assert len(run["pending_interrupts"]) == 2
    page = admin_session("reviewer")
    expect(page.locator("#queue-index-count")).to_have_text("2")
    shot(page, "admin-index")
    page.goto(QUEUE)
    for item in run["pending_interrupts"]:
        page.locator(f"input.action-select[value='{item['id']}']").check()
    page.select_option("select[name=action]", "reject_selected")
    page.click("button[name=index]")
    expect(page.locator("#reject-reason")).to_be_visible()
    shot(page, "admin-reject-selected")
    page.fill("#reject-reason", "not this quarter")
    page.click("input[type=submit][value^='Reject']")
    expect(page.locator(".messagelist")).to_contain_text("2 interrupts rejected")
    assert wait_run(owner, run_id, "rejected")["status"] == "rejected"
