"""A staff reviewer watching the owner's chat page and the admin approval queue loses the
decide permission: both pages say at once that live updates stopped (the streams end
with ``stream-error``: streams.access), instead of streaming on. The owner's own chat
page on the same run keeps getting events.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from agui.events import run_started, text_content, text_start
from streams.publish import publish, wait_published
from tests.retry_rows import retrying_run

# The test publishes the start of an AG-UI run by hand and leaves it open.
pytestmark = pytest.mark.agui_unchecked

QUEUE = "/admin/hitl/agentinterrupt/"
SOON = 10_000  # ms: well under the streams' periodic check (30 s)


def test_pages_stop_streaming_to_a_reviewer_who_loses_the_permission(login_as, users, shot):
    users["reviewer"].is_staff = True
    users["reviewer"].save(update_fields=["is_staff"])
    # Waiting to retry in 10 minutes: live, and left alone by workers and sweeps.
    run = retrying_run(users["owner"], in_seconds=600)
    chat_url = f"/c/{run.conversation_id}/"
    wide = {"width": 1300, "height": 900}
    owners, theirs, queue = (login_as(name, viewport=wide)
                             for name in ("owner", "reviewer", "reviewer"))
    owners.goto(chat_url)
    theirs.goto(chat_url)  # read-only: someone else's conversation
    queue.goto(QUEUE)
    expect(queue.locator("#queue-live")).to_have_attribute("data-live", "open")
    for page in (owners, theirs):
        expect(page.locator("#chat")).to_have_attribute("data-live", "true")

    users["reviewer"].user_permissions.remove(
        Permission.objects.get(codename="decide_interrupt"))
    for page in (theirs, queue):
        notice = page.locator("#stream-notice [data-state=closed]")
        expect(notice).to_be_visible(timeout=SOON)
        expect(notice).to_contain_text("Live updates stopped")
    shot(theirs, "chat-access-revoked", full_page=False)
    shot(queue, "queue-access-revoked", full_page=False)

    # The owner's page streams on: new text of the run reaches it, not the reviewer's.
    message = "after-revoke"
    publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                     text_start(message), text_content(message, "still here")])
    wait_published()
    expect(owners.locator(f"#msg-{message} .msg__text")).to_have_text("still here")
    expect(owners.locator("#stream-notice [data-state=closed]")).to_be_hidden()
    expect(theirs.locator(f"#msg-{message}")).to_have_count(0)
