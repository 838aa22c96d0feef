"""The approval queue (AgentInterrupt changelist) and who may see and decide what."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import AuditLog

pytestmark = pytest.mark.django_db

QUEUE = "/admin/hitl/agentinterrupt/"


def _login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _change(row) -> str:
    return f"{QUEUE}{row.pk}/change/"


def _rows(response) -> list[str]:
    """The interrupt pks listed on a changelist page, in order."""
    return [str(obj.pk) for obj in response.context["cl"].result_list]


def test_queue_opens_on_pending_oldest_first(staff, paused_run):
    old = paused_run(staff["alice"], ["approval"], age_minutes=300)[0]
    new = paused_run(staff["alice"], ["review"], age_minutes=10)[0]
    done = paused_run(staff["alice"], ["approval"], age_minutes=500)[0]
    AgentInterrupt.objects.filter(pk=done.pk).update(status="decided")
    response = _login(staff["reviewer"]).get(QUEUE)
    assert response.status_code == 200
    assert _rows(response) == [str(old.pk), str(new.pk)]
    page = response.content.decode()
    for column in ("age", "kind", "question", "agent", "requester", "time_left"):
        assert f"column-{column}" in page, column
    assert "Ship it?" in page and "alice" in page
    everything = _login(staff["reviewer"]).get(QUEUE + "?status=all")
    assert _rows(everything) == [str(done.pk), str(old.pk), str(new.pk)]


def test_overdue_rows_are_marked_and_filtered(staff, paused_run, no_sweep):
    late = paused_run(staff["alice"], ["approval"], expires_in=timedelta(minutes=-5))[0]
    fine = paused_run(staff["alice"], ["approval"], expires_in=timedelta(hours=2))[0]
    none = paused_run(staff["alice"], ["approval"])[0]
    client = _login(staff["reviewer"])
    page = client.get(QUEUE).content.decode()
    assert page.count('class="queue-overdue"') == 2  # age and time left of the late one
    assert "overdue by" in page
    assert _rows(client.get(QUEUE + "?overdue=yes")) == [str(late.pk)]
    assert set(_rows(client.get(QUEUE + "?overdue=no"))) == {str(fine.pk), str(none.pk)}


def test_filters_kind_and_agent(staff, paused_run):
    approval, review = paused_run(staff["alice"], ["approval", "review"])
    other = paused_run(staff["alice"], ["approval"], agent="showcase")[0]
    client = _login(staff["reviewer"])
    assert set(_rows(client.get(QUEUE + "?kind=approval"))) == {str(approval.pk), str(other.pk)}
    assert _rows(client.get(QUEUE + "?kind=review")) == [str(review.pk)]
    assert _rows(client.get(QUEUE + "?agent=showcase")) == [str(other.pk)]


def test_search_question_run_id_and_requester(staff, paused_run):
    approval = paused_run(staff["alice"], ["approval"])[0]
    select = paused_run(staff["clerk"], ["select"])[0]
    client = _login(staff["reviewer"])
    assert _rows(client.get(QUEUE, {"q": "ship it"})) == [str(approval.pk)]
    assert _rows(client.get(QUEUE, {"q": str(select.run_id)})) == [str(select.pk)]
    assert _rows(client.get(QUEUE, {"q": "clerk"})) == [str(select.pk)]
    assert _rows(client.get(QUEUE, {"q": "no such thing"})) == []


def test_query_count_does_not_grow_with_rows(staff, paused_run, django_assert_max_num_queries):
    client = _login(staff["reviewer"])
    paused_run(staff["alice"], ["approval"])
    client.get(QUEUE)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        client.get(QUEUE)
    for i in range(12):
        paused_run(staff["alice" if i % 2 else "clerk"], ["approval", "review"])
    with django_assert_max_num_queries(len(few)):
        response = client.get(QUEUE)
    assert len(_rows(response)) == 25


def test_header_and_index_count_what_waits_for_the_user(staff, paused_run):
    paused_run(staff["alice"], ["approval", "review"])
    paused_run(staff["clerk"], ["approval"])
    reviewer = _login(staff["reviewer"]).get("/admin/").content.decode()
    assert "3 waiting for you" in reviewer
    assert 'id="queue-index-count">3<' in reviewer
    clerk = _login(staff["clerk"]).get("/admin/").content.decode()
    assert "1 waiting for you" in clerk
    # The queue page counts the same, unfiltered (its own count reused) or filtered.
    for query in ("", "?kind=review", "?status=all", "?q=alice"):
        page = _login(staff["reviewer"]).get(QUEUE + query).content.decode()
        assert "3 waiting for you" in page, query


def test_reviewer_decides_anyones_interrupt(staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    client = _login(staff["reviewer"])
    page = client.get(_change(row))
    assert page.status_code == 200
    assert b'data-interrupt-id="' + row.interrupt_id.encode() in page.content
    assert b"please do thing" in page.content  # the conversation so far
    assert f'href="/c/{row.run.conversation_id}/"'.encode() in page.content  # its chat page
    assert f'href="/admin/runs/agentrun/{row.run_id}/change/"'.encode() in page.content
    response = client.post(_change(row) + "?_after=queue", {"decision": "approve"})
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.status, row.decision, row.decided_by) == ("decided", {"approved": True},
                                                         staff["reviewer"])
    audit = AuditLog.objects.get(run=row.run, action="decision")
    assert (audit.actor, audit.surface) == (staff["reviewer"], "admin")
    after = client.get(_change(row)).content.decode()
    assert "Answered by" in after and "reviewer" in after
    assert 'class="card__form"' not in after


def test_staff_without_permission_sees_and_decides_only_own_runs(staff, paused_run):
    own = paused_run(staff["clerk"], ["approval"])[0]
    other = paused_run(staff["alice"], ["approval"])[0]
    client = _login(staff["clerk"])
    assert _rows(client.get(QUEUE)) == [str(own.pk)]
    missing = client.get(_change(other))  # "doesn't exist" → the queue, with a warning
    assert missing.status_code == 302 and missing["Location"] == QUEUE
    client.post(_change(other), {"decision": "approve"})
    other.refresh_from_db()
    assert other.status == "pending"
    assert client.post(_change(own) + "?_after=queue", {"decision": "reject",
                                                        "reason": "no"}).status_code == 302
    own.refresh_from_db()
    assert own.decision == {"approved": False, "reason": "no"}


def test_non_staff_gets_the_login_page_and_changes_nothing(staff, paused_run):
    row = paused_run(staff["member"], ["approval"])[0]
    client = _login(staff["member"])
    for response in (client.get(QUEUE), client.get(_change(row)),
                     client.post(_change(row), {"decision": "approve"})):
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    row.refresh_from_db()
    assert row.status == "pending"


def test_posts_need_the_csrf_token(staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff["reviewer"])
    assert client.post(_change(row), {"decision": "approve"}).status_code == 403
    assert client.post(QUEUE, {"action": "approve_selected", "_selected_action": [row.pk],
                               "index": 0}).status_code == 403
    row.refresh_from_db()
    assert row.status == "pending"


def test_errors_show_on_the_card_and_nothing_changes(staff, paused_run):
    row = paused_run(staff["alice"], ["select"])[0]
    client = _login(staff["reviewer"])
    response = client.post(_change(row), {"value": "nightly"})  # not an offered option
    assert response.status_code == 200
    page = response.content.decode()
    errors = page[page.index('class="errors'):]
    assert "nightly" in errors[:errors.index("</ul>")]
    row.refresh_from_db()
    assert row.status == "pending"
    assert not AuditLog.objects.filter(run=row.run, action="decision").exists()


def test_answered_elsewhere_meanwhile_shows_who(staff, paused_run):
    from execution.lifecycle import interrupts_answer
    from hitl.decide import Answer

    row = paused_run(staff["alice"], ["approval"])[0]
    interrupts_answer(actor=staff["alice"], run_id=row.run_id, surface="api", answers=[
        Answer(interrupt_id=row.interrupt_id, payload={"approved": True})])
    response = _login(staff["reviewer"]).post(_change(row), {"decision": "reject"})
    page = response.content.decode()
    assert response.status_code == 200
    # Named by its question and who answered, said once (on the card, not in a message too).
    assert page.count("“Ship it?” was already answered by alice.") == 1
    assert "Answered by" in page and "alice" in page
    row.refresh_from_db()
    assert row.decided_by == staff["alice"]


def test_review_edit_shows_original_beside_edited(staff, paused_run):
    row = paused_run(staff["alice"], ["review"])[0]
    client = _login(staff["reviewer"])
    client.post(_change(row) + "?_after=queue",
                {"decision": "edit", "edited_json": '{"title": "Smaller", "steps": ["ship"]}'})
    row.refresh_from_db()
    assert row.decision["edited"] == {"title": "Smaller", "steps": ["ship"]}
    page = client.get(_change(row)).content.decode()
    assert 'id="edit-original"' in page and "Release" in page
    assert 'id="edit-edited"' in page and "Smaller" in page


def test_business_rows_stay_read_only(staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    client = _login(staff["reviewer"])
    assert client.get(QUEUE + "add/").status_code == 403
    assert client.post(f"{QUEUE}{row.pk}/delete/").status_code in (302, 403)
    assert AgentInterrupt.objects.filter(pk=row.pk).exists()
