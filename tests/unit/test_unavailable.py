"""Postgres or Redis not answering is a 503 with Retry-After in the API's error shape."""

from __future__ import annotations

import pytest
import redis
from django.db import InterfaceError, OperationalError

from agentsite.api_errors import exception_handler


@pytest.mark.parametrize("exc", [
    OperationalError("connection refused"), InterfaceError("connection already closed"),
    redis.ConnectionError("Error 111 connecting"), redis.TimeoutError("Timeout reading"),
])
def test_backing_service_errors_are_503(exc):
    response = exception_handler(exc, {})
    assert response.status_code == 503
    assert response.data["code"] == "unavailable" and response.data["detail"]
    assert response["Retry-After"] == "2"


def test_other_errors_stay_unhandled():
    assert exception_handler(ValueError("bug"), {}) is None  # → the JSON 500 handler
