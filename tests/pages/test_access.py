"""Chat pages with Django's test client: who sees what, and answers by plain form POSTs."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AgentRun, AuditLog
from runs.services import run_start


def wait_status(run: AgentRun, *statuses: str, timeout: float = 30) -> AgentRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in statuses:
            return run
        time.sleep(0.05)
    raise AssertionError(f"run stayed {run.status}, wanted {statuses}")


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def paused(live, users) -> AgentRun:
    run = run_start(owner=users["owner"], agent="approvals", input={"change": "Rename <b>x</b>"},
                    message="please")
    return wait_status(run, "paused")


def pending_ids(run: AgentRun) -> list[str]:
    return list(run.interrupts.filter(status="pending").values_list("interrupt_id", flat=True))


def test_anonymous_is_sent_to_login(paused):
    client = client_for(None)
    for url in ("/", "/new/", f"/c/{paused.conversation_id}/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")
    response = client.post(f"/c/{paused.conversation_id}/answer/{pending_ids(paused)[0]}/",
                           {"decision": "approve"})
    assert response.status_code == 302
    assert pending_ids(paused) and len(pending_ids(paused)) == 2


def test_owner_sees_the_conversation_with_composer_and_cancel(paused, users):
    client = client_for(users["owner"])
    page = client.get(f"/c/{paused.conversation_id}/").content.decode()
    assert 'id="composer"' in page and 'id="cancel-form"' in page
    assert page.count('class="card card--approval card--pending"') == 2
    assert "Rename &lt;b&gt;x&lt;/b&gt;" in page and "<b>x</b>" not in page
    listing = client.get("/").content.decode()
    assert "Needs your answer" in listing and str(paused.conversation_id) in listing


def test_reviewer_reads_and_answers_but_cannot_write(paused, users):
    client = client_for(users["reviewer"])
    conv = paused.conversation_id
    page = client.get(f"/c/{conv}/").content.decode()
    # No composer; the run's cancel, as on every surface (hitl.selectors: owner or reviewer).
    assert 'id="composer"' not in page and 'id="cancel-form"' in page
    assert "Reviewing · owner's conversation" in page and "Read-only" not in page
    assert page.count("<form method=\"post\" action=\"/c/") == 3
    assert client.post(f"/c/{conv}/send/", {"message": "hi"}).status_code == 404
    assert "Waiting for a reviewer" in client.get("/").content.decode()
    first = pending_ids(paused)[0]
    response = client.post(f"/c/{conv}/answer/{first}/", {"decision": "approve"})
    assert response.status_code == 302
    row = AgentInterrupt.objects.get(interrupt_id=first)
    assert row.status == "decided" and row.decided_by == users["reviewer"]
    assert AuditLog.objects.filter(interrupt_ref=first, action="decision").get().surface == "page"


def test_outsider_gets_404_everywhere(paused, users):
    client = client_for(users["outsider"])
    conv, first = paused.conversation_id, pending_ids(paused)[0]
    for url in (f"/c/{conv}/", f"/c/{conv}/composer/", f"/c/{conv}/runs/{paused.id}/"):
        assert client.get(url).status_code == 404, url
    for url, data in ((f"/c/{conv}/answer/{first}/", {"decision": "approve"}),
                      (f"/c/{conv}/send/", {"message": "hi"}), (f"/c/{conv}/cancel/", {})):
        assert client.post(url, data).status_code == 404, url
    assert str(conv) not in client.get("/").content.decode()
    assert len(pending_ids(paused)) == 2
    assert client.get("/c/not-a-uuid/").status_code == 404


def test_no_js_answers_errors_and_conflicts(paused, users):
    client = client_for(users["owner"])
    conv = paused.conversation_id
    first, second = pending_ids(paused)
    # A form problem: the page again, the card with its error, nothing recorded.
    response = client.post(f"/c/{conv}/answer/{first}/", {"decision": "maybe"})
    assert response.status_code == 400
    assert "approve or reject" in response.content.decode()
    assert len(pending_ids(paused)) == 2
    # A good answer redirects back to the card.
    response = client.post(f"/c/{conv}/answer/{first}/", {"decision": "reject", "reason": "no"})
    assert response.status_code == 302 and response["Location"].endswith(f"#card-{first}")
    # The same answer again (a double submit): 409, the card says who answered: the same
    # user, so "you, in another tab", and names the question.
    response = client.post(f"/c/{conv}/answer/{first}/", {"decision": "approve"})
    assert response.status_code == 409
    body = response.content.decode()
    assert "was already answered by you, in another tab." in body and "Rejected: no" in body
    assert AgentInterrupt.objects.get(interrupt_id=first).decision == {"approved": False,
                                                                      "reason": "no"}
    # An htmx answer gets the card back, answered.
    response = client.post(f"/c/{conv}/answer/{second}/", {"decision": "approve"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert 'data-status="decided"' in response.content.decode()
    run = wait_status(paused, "rejected", "completed")
    assert run.status == "rejected"


def test_composer_starts_the_next_run_and_cancel(paused, users):
    client = client_for(users["owner"])
    conv = paused.conversation_id
    # Busy thread: the composer refuses and says why.
    response = client.post(f"/c/{conv}/send/", {"message": "again"})
    assert response.status_code == 400 and "unfinished run" in response.content.decode()
    assert client.post(f"/c/{conv}/cancel/").status_code == 302
    paused.refresh_from_db()
    assert paused.status == "cancelled"
    assert client.post(f"/c/{conv}/send/", {"message": ""}).status_code == 400
    response = client.post(f"/c/{conv}/send/", {"message": "once more"})
    assert response.status_code == 302
    runs = AgentRun.objects.filter(conversation_id=conv).order_by("created_at")
    assert runs.count() == 2 and runs.last().input == {"change": "Rename <b>x</b>"}
    wait_status(runs.last(), "paused")
    # The finished run comes from the cache the second time: the same page either way.
    first, second = (client.get(f"/c/{conv}/").content.decode() for _ in range(2))
    for page in (first, second):
        assert f'id="run-{paused.id}"' in page and f'id="run-{runs.last().id}"' in page
        assert page.count('class="card card--approval card--pending"') == 2
        assert page.count('class="card card--approval card--readonly card--cancelled"') == 2


def test_new_chat_form_shows_input_errors(live, users):
    client = client_for(users["owner"])
    page = client.get("/new/tasklist/").content.decode()
    assert 'name="doc"' in page
    response = client.post("/new/tasklist/", {"doc": "not-a-doc-ref"})
    assert response.status_code == 400
    assert "String should match pattern" in response.content.decode()
    assert not AgentRun.objects.exists()
    assert client.get("/new/nope/").status_code == 404


def test_pages_send_a_csp_without_unsafe_inline_scripts(live, users):
    response = client_for(users["owner"]).get("/")
    policy = response["Content-Security-Policy"]
    script = next(p for p in policy.split(";") if p.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script and "'unsafe-eval'" not in script
