"""LangGraph's JS client (@langchain/langgraph-sdk Client in Node: tests/node/lg_dev.test.mjs)
through Pushpin, its streams held by the proxy (lgapi.hold): the same flow as direct
(tests/lgapi/test_js_client.py)."""

from __future__ import annotations

import pytest

from runs.models import AgentRun
from tests.agui.test_agui_node import node_test

pytestmark = pytest.mark.django_db(transaction=True)


def test_js_client_through_pushpin(edge, live, users):
    node_test(edge["base_url"], users["owner_token"], "lg_dev.test.mjs")
    assert sorted(AgentRun.objects.values_list("status", flat=True)) == ["cancelled",
                                                                         "completed"]
