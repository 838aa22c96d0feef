"""The per-user stream tells pages when an interrupt appears or is decided."""

from __future__ import annotations

import httpx
import pytest

from tests.helpers import answer_and_wait, start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)


def next_about(stream: SseStream, run_id: str):
    """The next event about ``run_id`` (suites running side by side share Redis, and
    their users have the same ids as ours)."""
    while True:
        event = stream.next()
        if event.json()["run_id"] == run_id:
            return event


def test_queue_changes_reach_the_owner_and_reviewers_only(api, users, live):
    owner, reviewer = api("owner"), api("reviewer")
    quiet = httpx.Client(base_url=live["base_url"], timeout=httpx.Timeout(10, read=2),
                         headers={"Authorization": f"Token {users['outsider_token']}"})
    with SseStream(owner, "/api/events/") as mine, \
            SseStream(reviewer, "/api/events/") as everyone, \
            SseStream(quiet, "/api/events/") as others:
        for stream in (mine, everyone, others):
            assert stream.next(skip_control=False).event == "stream-open"

        run = wait_run(owner, start_run(owner)["id"], "paused")  # an interrupt appears
        change = {"type": "interrupts_changed", "run_id": run["id"]}
        appeared = next_about(mine, run["id"])
        assert appeared.json() == change
        assert appeared.id == f"user-{users['owner'].pk}:{appeared.number}"
        seen = next_about(everyone, run["id"])
        assert seen.json() == {**change, "owner_id": users["owner"].pk}
        assert seen.id.startswith("reviewers:")

        answer_and_wait(owner, run, {"value": "Apollo"})  # decided; the next one appears
        numbers = [appeared.number]
        for _ in range(2):
            event = next_about(mine, run["id"])
            assert event.json() == change
            numbers.append(event.number)
        assert numbers == sorted(set(numbers))  # ids grow
        for _ in range(2):
            assert next_about(everyone, run["id"]).json()["owner_id"] == users["owner"].pk

        # Nothing of this reached another user.
        with pytest.raises(httpx.ReadTimeout):
            next_about(others, run["id"])
    quiet.close()
