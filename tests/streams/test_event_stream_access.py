"""Who may open an SSE stream: refused with a real 401/404 before any streaming."""

from __future__ import annotations

import uuid

import httpx
import pytest
from django.test import Client

from tests.helpers import start_run, wait_run
from tests.sse_client import SseStream

pytestmark = pytest.mark.django_db(transaction=True)

SSE = {"Accept": "text/event-stream"}


def test_another_users_run_stream_is_404_before_streaming(api):
    owner, outsider = api("owner"), api("outsider")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    for url in (f"/api/runs/{run['id']}/events/", f"/api/runs/{uuid.uuid4()}/events/"):
        with SseStream(outsider, url, headers=SSE) as stream:
            assert stream.status == 404, url
            assert stream.response.headers["content-type"] == "application/json"
            assert stream.json()["code"] == "not_found"
    # The id is not a uuid: the same JSON 404.
    r = outsider.get("/api/runs/nope.x/events/", headers=SSE)
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_anonymous_and_bad_token_are_401(api, live):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    for headers in ({}, {"Authorization": "Token nope"}):
        with httpx.Client(base_url=live["base_url"], headers={**SSE, **headers},
                          timeout=10) as client:
            for url in (f"/api/runs/{run['id']}/events/", "/api/events/"):
                with SseStream(client, url) as stream:
                    assert stream.status == 401, (url, headers)
                    assert stream.response.headers["content-type"] == "application/json"
                    assert "WWW-Authenticate" in stream.response.headers


def test_owner_and_reviewer_stream_by_token(api):
    owner, reviewer = api("owner"), api("reviewer")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    for client in (owner, reviewer):
        with SseStream(client, f"/api/runs/{run['id']}/events/", headers=SSE) as stream:
            assert stream.status == 200
            assert stream.response.headers["content-type"].startswith("text/event-stream")
            assert stream.next(skip_control=False).event == "stream-open"
            first = stream.next()
            assert first.json()["type"] == "RUN_STARTED"
            assert first.id == f"run-{run['id']}:1"


def test_session_auth_streams_too(api, live, users):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    browser = Client()
    browser.force_login(users["owner"])
    cookies = {"sessionid": browser.cookies["sessionid"].value}
    with httpx.Client(base_url=live["base_url"], cookies=cookies, headers=SSE,
                      timeout=10) as client:
        with SseStream(client, f"/api/runs/{run['id']}/events/") as stream:
            assert stream.status == 200
            assert stream.next().json()["type"] == "RUN_STARTED"
        with SseStream(client, "/api/events/") as stream:
            assert stream.status == 200
            assert stream.next(skip_control=False).event == "stream-open"


def test_proxy_only_parameters_are_refused(api):
    owner = api("owner")
    run = wait_run(owner, start_run(owner)["id"], "paused")
    url = f"/api/runs/{run['id']}/events/"
    for params in ({"es-meta": "x"}, {"recover": "true"}, {"lastEventId": "garbage"},
                   {"lastEventId": f"run-{run['id']}:x"}):
        r = owner.get(url, params=params, headers=SSE)
        assert r.status_code == 400, (params, r.text)
        assert r.headers["content-type"] == "application/json"
