"""How a segment's exception is judged (execution/retries.py), on the SDKs' own classes."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from agentsite.errors import Conflict
from execution.retries import backoff_seconds, judge


def _status_error(status: int, headers: dict | None = None) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://provider/v1/chat/completions")
    response = httpx.Response(status, headers=headers or {}, request=request)
    return openai.APIStatusError(f"Error code: {status}", response=response, body=None)


@pytest.mark.parametrize("status, transient", [(429, True), (500, True), (503, True),
                                               (408, True), (400, False), (401, False),
                                               (403, False), (404, False)])
def test_status_codes(status, transient):
    failure = judge(_status_error(status))
    assert (failure.transient, failure.provider) == (transient, True)
    assert f"({status})" in failure.reason and "Error code" in failure.detail


def test_retry_after_is_read():
    assert judge(_status_error(429, {"retry-after": "7"})).retry_after == 7.0


def test_connection_and_timeout_errors_are_transient():
    request = httpx.Request("POST", "http://provider/")
    assert judge(openai.APITimeoutError(request=request)).reason == (
        "The model provider did not answer in time")
    assert judge(openai.APIConnectionError(request=request)).transient
    assert judge(httpx.RemoteProtocolError("peer closed")).transient


def test_our_own_errors_are_the_agents():
    # Conflict carries a status_code (409) but is not the provider's.
    for exc in (Conflict("already decided"), ValueError("boom"),
                json.JSONDecodeError("Expecting value", "x", 0)):
        failure = judge(exc)
        assert not failure.transient and not failure.provider, exc


def test_wrapped_provider_error_is_found():
    try:
        try:
            raise _status_error(502)
        except openai.APIStatusError as inner:
            raise RuntimeError("node failed") from inner
    except RuntimeError as outer:
        assert judge(outer).transient


def test_backoff_doubles_to_the_cap(settings):
    settings.MODEL_RETRY_BACKOFF_SECONDS, settings.MODEL_RETRY_BACKOFF_MAX_SECONDS = 10, 300
    assert [backoff_seconds(n) for n in range(7)] == [10, 20, 40, 80, 160, 300, 300]
    assert backoff_seconds(0, retry_after=45) == 45
