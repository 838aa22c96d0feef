"""The LangGraph SDK's own clients on the session's live server (uvicorn + worker)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langgraph_sdk import get_client, get_sync_client


@pytest.fixture
def lg(live, users) -> Iterator[Callable[[str], Any]]:
    """lg("owner") → langgraph-sdk's sync client at /lg, with the user's API token as
    its api_key (sent as X-Api-Key)."""
    made: list[Any] = []

    def make(who: str = "owner") -> Any:
        client = get_sync_client(url=live["base_url"] + "/lg",
                                 api_key=users[who + "_token"], timeout=60)
        made.append(client)
        return client

    yield make
    for client in made:
        client.http.client.close()


@pytest.fixture
def lg_async(live, users) -> Callable[[str], Any]:
    def make(who: str = "owner") -> Any:
        return get_client(url=live["base_url"] + "/lg", api_key=users[who + "_token"],
                          timeout=60)

    return make
