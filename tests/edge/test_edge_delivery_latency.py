"""Held GRIP streams: the proxy writes the events to its held streams itself, so the
edge forwarder times each event when it hands it to the proxy
(``agentsite_event_delivery_seconds{surface="grip", path="live"}``): events published
on a run's channel move that count by as many."""

from __future__ import annotations

import time

import pytest
from ag_ui.core import CustomEvent
from prometheus_client.parser import text_string_to_metric_families

from streams.publish import publish
from tests.helpers import start_run, wait_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agui_unchecked]


def handed_over(reader) -> float:
    text = reader.get("/metrics").text
    return sum(s.value for family in text_string_to_metric_families(text)
               for s in family.samples
               if s.name == "agentsite_event_delivery_seconds_count"
               and s.labels == {"surface": "grip", "path": "live"})


def test_the_forwarder_times_each_event_it_hands_to_the_proxy(via_edge, edge, api):
    owner, reader = via_edge("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner)["id"], "paused")["id"]
    before = handed_over(reader)
    publish(run, [CustomEvent(name="timed", value=n) for n in range(5)])
    deadline = time.monotonic() + 10
    while handed_over(reader) - before < 5:
        assert time.monotonic() < deadline, handed_over(reader) - before
        time.sleep(0.05)
