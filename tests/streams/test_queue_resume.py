"""The queue stream (/api/events/, "from now on") names "now" in its ``stream-open`` id, so a
client cut off or refused before its first event resumes from there: a queue change made
while it was away is replayed, not skipped by a new "now". Owner (own channel), reviewer
(everyone's), outsider (their own: nothing of the owner's), anonymous (401, no stream);
the edge variant is tests/edge/test_edge_queue_resume.py.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from tests.helpers import start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)

SSE = {"Accept": "text/event-stream"}


def next_about(stream: SseStream, run_id: str):
    while True:  # suites side by side share Redis and user ids
        event = stream.next()
        if event.json().get("run_id") == run_id:
            return event


def check_resume_from_open(client: Callable[[str], httpx.Client], users: dict) -> None:
    owner, reviewer = client("owner"), client("reviewer")
    opens = {}
    for who, stream_client in (("owner", owner), ("reviewer", reviewer)):
        with SseStream(stream_client, "/api/events/", headers=SSE) as stream:
            assert stream.status == 200
            opened = stream.next(skip_control=False)
            assert opened.event == "stream-open"
            channel = "reviewers" if who == "reviewer" else f"user-{users['owner'].pk}"
            assert opened.id is not None and opened.id.startswith(channel + ":"), opened.id
            opens[who] = opened.id
        # The stream is gone (cut, then refused) before any event came.
    outsider = client("outsider")  # their own channel: nothing of the owner's reaches it
    with SseStream(outsider, "/api/events/", headers=SSE) as stream:
        opened = stream.next(skip_control=False)
        assert opened.id is not None
        assert opened.id.startswith(f"user-{users['outsider'].pk}:"), opened.id
        opens["outsider"] = opened.id
    with SseStream(client(None), "/api/events/", headers=SSE) as stream:
        assert stream.status == 401  # anonymous: before any stream-open
    run = wait_run(owner, start_run(owner)["id"], "paused")  # meanwhile: an interrupt appears
    for who, stream_client in (("owner", owner), ("reviewer", reviewer)):
        with SseStream(stream_client, "/api/events/",
                       headers={**SSE, "Last-Event-ID": opens[who]}) as stream:
            assert stream.status == 200
            change = next_about(stream, run["id"])
            assert change.json()["type"] == "interrupts_changed"
            assert change.number > int(opens[who].rsplit(":", 1)[1])
    quiet = httpx.Client(base_url=outsider.base_url, headers=outsider.headers,
                         timeout=httpx.Timeout(10, read=2))
    with SseStream(quiet, "/api/events/",
                   headers={**SSE, "Last-Event-ID": opens["outsider"]}) as stream:
        assert stream.status == 200
        with pytest.raises(httpx.ReadTimeout):
            next_about(stream, run["id"])
    quiet.close()


def test_queue_stream_resumes_from_where_it_opened(api, users):
    check_resume_from_open(api, users)


def test_run_stream_open_names_no_id(api, users):
    # A run's stream starts from its first event: nothing to name.
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    with SseStream(owner, f"/api/runs/{run['id']}/events/", headers=SSE) as stream:
        opened = stream.next(skip_control=False)
        assert (opened.event, opened.id) == ("stream-open", None)
