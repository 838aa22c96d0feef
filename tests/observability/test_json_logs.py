"""LOG_FORMAT=json: one JSON object a line, with the request id (the client's, or a new
one, answered in X-Request-Id) and the run id of a worker's task; plain text otherwise."""

from __future__ import annotations

import io
import json
import logging
import logging.config

from django.http import HttpResponse
from django.test import RequestFactory

from observability.logs import RequestIdMiddleware, logging_config, run_context


def captured(json_lines: bool) -> tuple[logging.Logger, io.StringIO]:
    config = logging_config(json_lines=json_lines, level="INFO")
    stream = io.StringIO()
    config["handlers"]["console"]["stream"] = stream
    config["root"] = {"level": "WARNING"}
    config["loggers"] = {"obs-test": {"handlers": ["console"], "level": "INFO",
                                      "propagate": False}}
    logging.config.dictConfig(config)
    return logging.getLogger("obs-test"), stream


def view_logging(log: logging.Logger):
    def view(request):
        log.info("deciding %s", "x")
        return HttpResponse("ok")
    return view


def test_json_lines_carry_the_request_and_run_ids():
    log, stream = captured(json_lines=True)
    try:
        middleware = RequestIdMiddleware(view_logging(log))
        response = middleware(RequestFactory().get("/", HTTP_X_REQUEST_ID="req-42"))
        assert response["X-Request-Id"] == "req-42"
        with run_context("run-7"):
            log.warning("segment failed")
        # A header that is no sane id is replaced (it is written into every line).
        fresh = middleware(RequestFactory().get("/", HTTP_X_REQUEST_ID='x" \n{'))
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        logging.config.dictConfig(_settings_logging())
    assert lines[0]["message"] == "deciding x" and lines[0]["request_id"] == "req-42"
    assert lines[0]["level"] == "INFO" and lines[0]["logger"] == "obs-test" and lines[0]["time"]
    assert lines[0]["run_id"] == ""
    assert lines[1]["run_id"] == "run-7" and lines[1]["request_id"] == ""
    assert len(fresh["X-Request-Id"]) == 32 and lines[2]["request_id"] == fresh["X-Request-Id"]


def test_plain_text_is_the_default():
    log, stream = captured(json_lines=False)
    try:
        log.info("hello")
    finally:
        logging.config.dictConfig(_settings_logging())
    assert stream.getvalue().rstrip().endswith("INFO obs-test: hello")


def _settings_logging() -> dict:
    from django.conf import settings

    return settings.LOGGING
