"""An open stream is told at once that its user lost access (streams.access), not at its
next periodic check (30 s), and that check reads the user as the database has it: a
reviewer whose permission is taken away (from the user, or from their group), an owner
who is deactivated; and a stream ends with the API token or the session it was opened
with (deleted, logged out). Streams of others on the same run go on. The edge variant is
tests/edge/test_edge_access_revoked.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import Group, Permission
from django.contrib.sessions.backends.db import SessionStore

from agentsite.models import ApiToken
from agentsite.token_auth import token_revoke
from tests.helpers import answer, published_events, start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)

SSE = {"Accept": "text/event-stream"}
SOON = 10  # seconds: well under the periodic check's 30


def _quick(client: httpx.Client) -> httpx.Client:
    """The same user's client, whose reads give up after SOON seconds."""
    return httpx.Client(base_url=client.base_url, headers=client.headers,
                        timeout=httpx.Timeout(10, read=SOON))


def _refused_soon(stream: SseStream) -> float:
    """Seconds until the stream says access is gone (its read fails after SOON)."""
    began = time.monotonic()
    while True:
        event = stream.next(skip_control=False)
        if event.event == "stream-error":
            assert event.json()["condition"] == "forbidden", event.data
            return time.monotonic() - began


def _open(client: httpx.Client, path: str, last: str | None = None) -> SseStream:
    resume = {"Last-Event-ID": last} if last else {}
    stream = SseStream(client, path, headers={**SSE, **resume})
    assert stream.status == 200
    assert stream.next(skip_control=False).event == "stream-open"
    return stream


def test_a_reviewer_whose_permission_is_taken_is_cut_off_at_once(
        api: Callable[[str | None], httpx.Client], users):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    path = f"/api/runs/{run['id']}/events/"
    decide = Permission.objects.get(codename="decide_interrupt")
    stored = f"run-{run['id']}:{len(published_events(run['id']))}"
    reviewer = _quick(api("reviewer"))
    with (_open(_quick(owner), path, last=stored) as owners, _open(reviewer, path) as theirs,
          _open(reviewer, "/api/events/") as queue):
        users["reviewer"].user_permissions.remove(decide)
        assert _refused_soon(theirs) < SOON
        assert _refused_soon(queue) < SOON  # the reviewers' queue channel too
        # The owner's stream on the same run goes on: the answer's events reach it.
        assert answer(owner, run, {"value": "Ada"}).status_code == 202
        assert owners.next().json()["type"] == "RUN_STARTED"
    with SseStream(api("reviewer"), path, headers=SSE) as again:
        assert again.status == 404


def test_a_group_losing_the_permission_cuts_its_members_off(api, users):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    path = f"/api/runs/{run['id']}/events/"
    legal = Group.objects.create(name="legal")
    legal.permissions.add(Permission.objects.get(codename="decide_interrupt"))
    users["outsider"].groups.add(legal)  # a reviewer through the group
    with _open(_quick(api("outsider")), path) as theirs:
        legal.permissions.clear()
        assert _refused_soon(theirs) < SOON


def test_a_deactivated_owner_is_cut_off_at_once(api, users):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    with _open(_quick(owner), f"/api/runs/{run['id']}/events/") as stream:
        users["owner"].is_active = False
        users["owner"].save()
        assert _refused_soon(stream) < SOON


def test_a_revoked_token_or_deleted_session_ends_the_streams_it_opened(api, live, users):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    path = f"/api/runs/{run['id']}/events/"
    # A browser's session, as a login makes it.
    session = SessionStore()
    session[SESSION_KEY] = str(users["owner"].pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = users["owner"].get_session_auth_hash()
    session.create()
    browser = httpx.Client(base_url=live["base_url"], cookies={"sessionid": session.session_key},
                           timeout=httpx.Timeout(10, read=SOON))
    with _open(_quick(owner), path) as by_token, _open(browser, path) as by_session:
        session.delete()  # a logout
        assert _refused_soon(by_session) < SOON
        for token in ApiToken.objects.filter(user=users["owner"]):
            token_revoke(token_id=token.pk, actor=None)
        assert _refused_soon(by_token) < SOON
