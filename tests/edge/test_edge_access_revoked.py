"""A stream Pushpin holds is closed at once when its user may have lost access
(streams.access: the edge forwarder publishes a close on the user's ``access-<id>``
channel), not at the proxy's next check of its link (STREAM_RECHECK_SECONDS, 30 s). Its
reconnect is checked like any open: refused. The owner's held stream on the same run
goes on. A revoked API token closes the held streams it opened the same way. The direct
variant is tests/streams/test_access_revoked.py.
"""

from __future__ import annotations

import time

import httpx
import pytest
from django.contrib.auth.models import Permission

from agentsite.models import ApiToken
from agentsite.token_auth import token_revoke
from tests.helpers import answer, published_events, start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)

SSE = {"Accept": "text/event-stream"}
SOON = 10  # seconds


def _held(client: httpx.Client, path: str, last: str | None = None) -> SseStream:
    quick = httpx.Client(base_url=client.base_url, headers=client.headers,
                         timeout=httpx.Timeout(10, read=SOON))
    stream = SseStream(quick, path, headers={**SSE, **({"Last-Event-ID": last} if last else {})})
    assert stream.status == 200
    assert stream.next(skip_control=False).event == "stream-open"
    return stream


def _closed_soon(stream: SseStream) -> float:
    began = time.monotonic()
    with pytest.raises(EOFError):
        while True:
            stream.next(skip_control=False)
    return time.monotonic() - began


def test_a_held_stream_closes_when_its_reviewer_loses_the_permission(via_edge, users):
    owner, reviewer = via_edge("owner"), via_edge("reviewer")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    path = f"/api/runs/{run['id']}/events/"
    stored = f"run-{run['id']}:{len(published_events(run['id']))}"
    with _held(owner, path, last=stored) as owners, _held(reviewer, path, last=stored) as theirs:
        # Past the link the proxy asks 1 s after it subscribes a new channel: from here
        # on only the close (or the check in 120 s) would end the stream.
        time.sleep(3)
        users["reviewer"].user_permissions.remove(
            Permission.objects.get(codename="decide_interrupt"))
        assert _closed_soon(theirs) < SOON
        with SseStream(reviewer, path, headers=SSE) as again:
            assert again.status == 404  # the reconnect, checked
        assert answer(owner, run, {"value": "Ada"}).status_code == 202
        assert owners.next().json()["type"] == "RUN_STARTED"  # still held, still fed


def test_a_held_stream_closes_when_its_token_is_revoked(via_edge, users):
    owner = via_edge("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    path = f"/api/runs/{run['id']}/events/"
    with _held(owner, path) as stream:
        time.sleep(3)  # past the proxy's first look at the new hold
        for token in ApiToken.objects.filter(user=users["owner"]):
            token_revoke(token_id=token.pk, actor=None)
        assert _closed_soon(stream) < SOON
    with SseStream(owner, path, headers=SSE) as again:
        assert again.status == 401  # the reconnect, with the revoked token
