"""langgraph-sdk through Pushpin with the LangGraph API's streams held by the proxy
(``lgapi.hold``): no web process holds them (``agentsite_open_streams`` stays 0 for the
door while one is open), the parts are those a direct stream gives, a rejoin from a
``Last-Event-ID`` resumes, a run streams to its interrupt and is resumed with
``command``, a queued run's join waits held and then streams, the stateless stream is
held too, and an outsider gets a 404, an anonymous client a 401 / 403."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from langgraph_sdk import get_sync_client
from prometheus_client.parser import text_string_to_metric_families

from runs.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)
MODES = ["values", "updates", "messages-tuple"]


def _open_streams(base_url: str, token: str) -> float:
    text = httpx.get(base_url + "/metrics", headers={"Authorization": f"Token {token}"},
                     timeout=30).text
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples
               if s.name == "agentsite_open_streams" and s.labels["surface"] == "langgraph")


def _shape(parts) -> list[tuple[str, object]]:
    """What a client sees of a dev segment, ids and timestamps aside."""
    return [(p.event, sorted(p.data) if isinstance(p.data, dict) else len(p.data))
            for p in parts if p.event != "metadata"]


def test_sdk_streams_held_by_pushpin(edge, live, users):
    held = get_sync_client(url=edge["base_url"] + "/lg", api_key=users["owner_token"],
                           timeout=60)
    direct = get_sync_client(url=live["base_url"] + "/lg", api_key=users["owner_token"],
                             timeout=60)
    try:
        # The same segment, direct and held: the same parts.
        tid = held.threads.create()["thread_id"]
        parts = list(held.runs.stream(tid, "dev", input={"topic": "held"}, stream_mode=MODES))
        assert parts[0].event == "metadata"
        run_id = parts[0].data["run_id"]
        mine = direct.threads.create()["thread_id"]
        same = list(direct.runs.stream(mine, "dev", input={"topic": "held"},
                                       stream_mode=MODES))
        assert _shape(parts) == _shape(same), (_shape(parts), _shape(same))
        assert any(p.event == "updates" and "__interrupt__" in p.data for p in parts)

        # A rejoin after the first part: the rest of that segment.
        first_id = "2"
        rejoined = list(held.runs.join_stream(tid, run_id, last_event_id=first_id,
                                              stream_mode=MODES))
        assert [p.event for p in rejoined][0] == "metadata" and len(rejoined) > 1

        # Resumed with command over a held stream: the next question.
        resumed = list(held.runs.stream(tid, "dev", command={"resume": {"value": "Held"}},
                                        stream_mode=["updates"]))
        assert any(p.event == "updates" and "__interrupt__" in p.data for p in resumed)
        assert AgentRun.objects.get(pk=run_id).status == "paused"

        # A run queued behind the paused one: its join is held open (no web process
        # holds it) until the run starts, then streams its parts.
        queued = held.runs.create(tid, "dev", input={"topic": "next"},
                                  multitask_strategy="enqueue")
        got: list = []
        joiner = threading.Thread(target=lambda: got.extend(held.runs.join_stream(
            tid, queued["run_id"], stream_mode=["values"])))
        joiner.start()
        time.sleep(1.5)  # the join is open and held
        assert joiner.is_alive()
        assert _open_streams(live["base_url"], users["reviewer_token"]) == 0
        held.runs.cancel(tid, run_id)  # the paused run ends: the queued one starts
        joiner.join(60)
        assert not joiner.is_alive()
        assert [p.event for p in got][:2] == ["metadata", "values"], [p.event for p in got]
        assert got[-1].data["topic"] == "next"

        # The stateless stream (a new thread of the user's), held the same way.
        stateless = list(held.runs.stream(None, "dev", input={"topic": "stateless"},
                                          stream_mode=["updates"]))
        assert any(p.event == "updates" and "__interrupt__" in p.data for p in stateless)

        # Roles: another user's run is a 404, no credentials a 401 / 403.
        outsider = httpx.Client(base_url=edge["base_url"] + "/lg", timeout=30,
                                headers={"X-Api-Key": users["outsider_token"]})
        anonymous = httpx.Client(base_url=edge["base_url"] + "/lg", timeout=30)
        with outsider, anonymous:
            path = f"/threads/{tid}/runs/{run_id}/stream"
            assert outsider.get(path).status_code == 404
            assert anonymous.get(path).status_code in (401, 403)
            # The hold's next link is the proxy's only: a client asking for it is refused.
            assert outsider.get(path + "/held?h=x").status_code == 404
        # A reviewer reads anyone's run by id, as over REST: the same rejoin, held.
        reviewer = get_sync_client(url=edge["base_url"] + "/lg",
                                   api_key=users["reviewer_token"], timeout=60)
        try:
            seen = list(reviewer.runs.join_stream(tid, run_id, last_event_id=first_id,
                                                  stream_mode=MODES))
        finally:
            reviewer.http.client.close()
        assert _shape(seen) == _shape(rejoined), (_shape(seen), _shape(rejoined))
    finally:
        held.http.client.close()
        direct.http.client.close()
