"""Issue 28 on the chat page (server-rendered, no JavaScript here): the retry banner, a
failed run's plain error, its technical detail behind a disclosure and its Retry form
(owner or reviewer, audited), and the tokens a run used in its footer."""

from __future__ import annotations

import re
import threading
import time

import pytest
from django.db import connection
from django.test import Client

from runs.models import AgentRun, AuditLog
from tests.retry_rows import DETAIL, PLAIN_ERROR, RATE_LIMITED, failed_run, retrying_run

pytestmark = pytest.mark.usefixtures("live")


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def page_of(client: Client, run: AgentRun) -> str:
    response = client.get(f"/c/{run.conversation_id}/")
    assert response.status_code == 200
    return response.content.decode()


def text(html: str) -> str:
    """The page's words, tags dropped and spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def wait_status(run: AgentRun, *statuses: str, timeout: float = 30) -> AgentRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in statuses:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run stayed {run.status}, wanted {statuses}")


def retry_audits(run: AgentRun) -> list[AuditLog]:
    return list(AuditLog.objects.filter(run=run, action="run.status", from_status="failed",
                                        to_status="retrying"))


@pytest.mark.parametrize("who", ["owner", "reviewer"])
def test_retrying_run_says_why_when_and_which_attempt(users, who, settings):
    run = retrying_run(users["owner"], in_seconds=20, retries=2)
    html = page_of(client_for(users[who]), run)
    banner = re.search(r'<p class="banner banner--warn" id="retry-banner"[^>]*>(.*?)</p>', html,
                       re.S)
    assert banner and "hidden" not in banner.group(0).split(">")[0]
    words = text(banner.group(1)).strip()
    assert re.fullmatch(re.escape(RATE_LIMITED) + r"\. Retrying in (19|20) s \(attempt 2 of "
                        + str(settings.MODEL_RUN_RETRIES) + r"\)", words), words
    assert 'data-seconds="' in banner.group(0)
    assert 'status status--retrying' in html and ">Retrying<" in html
    # The run may still be cancelled (it is unfinished); no Retry form while it waits.
    assert 'id="cancel-form"' in html and "/retry/" not in html


def test_failed_run_plain_error_detail_and_retry_form(users):
    run = failed_run(users["owner"], usage=[(1200, 340)])
    for who in ("owner", "reviewer"):
        html = page_of(client_for(users[who]), run)
        assert f"The run failed: {PLAIN_ERROR}" in text(html)
        detail = re.search(r'<details class="run__detail"><summary>Technical details</summary>'
                           r"<pre>(.*?)</pre></details>", html, re.S)
        assert detail and "&lt;b&gt;exploded&lt;/b&gt;" in detail.group(1)  # escaped
        assert "<b>exploded</b>" not in html
        action = f"/c/{run.conversation_id}/runs/{run.id}/retry/"
        assert re.search(rf'<form method="post" action="{re.escape(action)}"[^>]*>\s*'
                         r'<input type="hidden" name="csrfmiddlewaretoken"', html)
        assert "Tokens: 1200 in / 340 out / 1540 total · gpt-4o-mini" in text(html)
        assert 'id="retry-banner"' in html and 'hidden>' in html  # not retrying: no banner


def test_retry_form_continues_the_run_audited(users):
    for who in ("owner", "reviewer"):
        run = failed_run(users["owner"])
        client = client_for(users[who])
        response = client.post(f"/c/{run.conversation_id}/runs/{run.id}/retry/")
        assert response.status_code == 302
        assert response["Location"] == f"/c/{run.conversation_id}/"
        [audit] = retry_audits(run)
        assert (audit.actor, audit.surface) == (users[who], "page")
        wait_status(run, "paused")  # dev starts over (no checkpoint here) and asks
        assert "The run failed" not in text(page_of(client, run))


def test_retry_refused_plainly(users):
    owner = client_for(users["owner"])
    # A later run on the thread: no form, and a POST says why, nothing changed.
    old = failed_run(users["owner"])
    later = failed_run(users["owner"], conversation=old.conversation)
    html = page_of(owner, old)
    assert f"/runs/{old.id}/retry/" not in html and f"/runs/{later.id}/retry/" in html
    response = owner.post(f"/c/{old.conversation_id}/runs/{old.id}/retry/")
    assert response.status_code == 409
    assert "A later run has started in this conversation" in text(response.content.decode())
    # Not failed (retried already, by someone else or in another tab).
    waiting = retrying_run(users["owner"])
    response = owner.post(f"/c/{waiting.conversation_id}/runs/{waiting.id}/retry/")
    assert response.status_code == 409
    assert ("This run can only be retried after it has failed; it is retrying now"
            in text(response.content.decode()))
    assert old.status == AgentRun.objects.get(pk=old.pk).status == "failed"
    assert not retry_audits(old) and not retry_audits(waiting)


def test_retry_needs_access_csrf_and_post(users):
    run = failed_run(users["owner"])
    url = f"/c/{run.conversation_id}/runs/{run.id}/retry/"
    outsider = client_for(users["outsider"])
    assert outsider.get(f"/c/{run.conversation_id}/").status_code == 404
    assert outsider.post(url).status_code == 404
    anonymous = client_for(None)
    response = anonymous.post(url)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(users["owner"])
    assert strict.post(url).status_code == 403
    owner = client_for(users["owner"])
    assert owner.get(url).status_code == 405
    assert owner.post(f"/c/{run.conversation_id}/runs/not-a-run/retry/").status_code == 404
    other = failed_run(users["outsider"])  # someone else's run, through this conversation
    assert owner.post(f"/c/{run.conversation_id}/runs/{other.id}/retry/").status_code == 404
    assert AgentRun.objects.get(pk=run.pk).status == "failed" and not retry_audits(run)
    assert AgentRun.objects.get(pk=other.pk).status == "failed" and not retry_audits(other)


def test_run_fragment_carries_usage_error_and_retry(users):
    # What the page's script swaps in when a run ends (RUN_ERROR / RUN_FINISHED).
    run = failed_run(users["owner"], usage=[(10, 5)])
    html = client_for(users["reviewer"]).get(
        f"/c/{run.conversation_id}/runs/{run.id}/", HTTP_HX_REQUEST="true").content.decode()
    assert "Tokens: 10 in / 5 out / 15 total" in text(html)
    assert DETAIL.split(":")[0] in html and f"/runs/{run.id}/retry/" in html


def test_two_retry_clicks_at_once_continue_the_run_once(users):
    # The owner and a reviewer click Retry together: one goes through, the other is told.
    run = failed_run(users["owner"])
    url = f"/c/{run.conversation_id}/runs/{run.id}/retry/"
    barrier = threading.Barrier(2)
    codes: list[int] = []

    def click(user) -> None:
        client = client_for(user)
        barrier.wait()
        try:
            codes.append(client.post(url).status_code)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=click, args=(users[w],)) for w in ("owner", "reviewer")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [302, 409]
    assert len(retry_audits(run)) == 1
    wait_status(run, "paused")
