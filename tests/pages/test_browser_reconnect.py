"""A chat page whose run stream is refused once (a proxy's 503, as Pushpin or a load
balancer answers during a restart or a deploy) recovers by itself, with nothing missed.

A browser's EventSource gives up for good on any non-200 answer; static/agentsite/events.js
then reopens the stream after a backoff, from the last event id it saw. Here real Chromium
loads the page through a small reverse proxy (stdlib, below) in front of the live server:
the test cuts the open stream (the browser reconnects by itself), the proxy answers that
reconnect 503, events are published meanwhile, and the page must end up with all of them,
once each, in order.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import expect

from agui.events import run_finished_success, run_started, text_content, text_end, text_start
from runs.models import AgentRun
from streams.publish import publish, wait_published
from tests.retry_rows import retrying_run

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
              "te", "trailer"}


class RefusingProxy:
    """Forwards every request to ``upstream`` (streaming the answer as it comes), except
    that the next ``refuse(path, n)`` requests for ``path`` get a 503. Records the path and
    query of every request for a path ending in ``/events/``."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.lock = threading.Lock()
        self.to_refuse: dict[str, int] = {}
        self.refused: list[str] = []
        self.streams: list[str] = []
        self.open: set[tuple[socket.socket, http.client.HTTPConnection]] = set()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def refuse(self, path: str, times: int = 1) -> None:
        with self.lock:
            self.to_refuse[path] = times

    def cut(self) -> None:
        """Drop every stream open through the proxy (as a restarted proxy does)."""
        with self.lock:
            held = list(self.open)
        for client, upstream in held:
            for sock in (client, upstream.sock):
                try:
                    if sock is not None:
                        sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def forward(self) -> None:
                path = urlsplit(self.path).path
                stream = path.endswith("/events/")
                with proxy.lock:
                    if stream:
                        proxy.streams.append(self.path)
                    refuse = proxy.to_refuse.get(path, 0) > 0
                    if refuse:
                        proxy.to_refuse[path] -= 1
                        proxy.refused.append(self.path)
                if refuse:
                    body = b"Service Unavailable\n"
                    self.send_response(503)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                upstream = http.client.HTTPConnection("127.0.0.1", proxy.upstream_port,
                                                      timeout=60)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in HOP_BY_HOP}
                held = (self.connection, upstream)
                try:
                    upstream.request(self.command, self.path, body=body, headers=headers)
                    answer = upstream.getresponse()
                    self.send_response_only(answer.status, answer.reason)
                    for name, value in answer.getheaders():
                        if name.lower() not in HOP_BY_HOP:
                            self.send_header(name, value)
                    self.send_header("Connection", "close")
                    self.end_headers()
                    if stream:
                        with proxy.lock:
                            proxy.open.add(held)
                    while chunk := answer.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (OSError, http.client.HTTPException):
                    pass  # cut, or the browser went away
                finally:
                    with proxy.lock:
                        proxy.open.discard(held)
                    upstream.close()
                    self.close_connection = True

            do_GET = do_POST = do_HEAD = do_PUT = do_PATCH = do_DELETE = forward

        return Handler

    def __enter__(self) -> RefusingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.cut()
        self.server.server_close()


def wait_for(check, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_chat_page_reopens_a_refused_stream_from_its_last_event(browser, live, users):
    owner = users["owner"]
    # Waiting to retry in 10 minutes: live (the stream's watchdog agrees with an open AG-UI
    # run) and left alone by the worker and the sweeps while the test publishes for it.
    run = retrying_run(owner, in_seconds=600)
    events_path = f"/api/runs/{run.id}/events/"
    message = "reconnect-1"
    port = int(live["base_url"].rsplit(":", 1)[1])
    with RefusingProxy(port) as proxy:
        context = browser.new_context(base_url=proxy.base_url)
        try:
            page = context.new_page()
            page.goto("/accounts/login/")
            page.fill("#id_username", "owner")
            page.fill("#id_password", "pw-owner")
            page.click("button[type=submit]")
            page.wait_for_url(f"{proxy.base_url}/")
            page.goto(f"/c/{run.conversation_id}/")
            expect(page.locator("#chat")).to_have_attribute("data-live", "true")
            wait_for(lambda: events_path in [s.split("?")[0] for s in proxy.streams])

            publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                             text_start(message), text_content(message, "a")])
            wait_published()
            text = page.locator(f"#msg-{message} .msg__text")
            expect(text).to_have_text("a")

            # The stream drops; the browser's own reconnect is refused (503): EventSource
            # is CLOSED for good, and events.js must open a new one.
            proxy.refuse(events_path)
            proxy.cut()
            wait_for(lambda: proxy.refused)
            publish(run.id, [text_content(message, "b"), text_content(message, "c")])
            wait_published()
            expect(text).to_have_text("abc")
            publish(run.id, [text_content(message, "d")])
            wait_published()
            expect(text).to_have_text("abcd")  # each once, in order

            # The new stream asked for what came after the last event the page had
            # ("a": the run's third event), the way streams/sse.py reads it.
            resumed = [parse_qs(urlsplit(s).query).get("lastEventId")
                       for s in proxy.streams if s.split("?")[0] == events_path]
            assert [f"run-{run.id}:3"] in resumed, resumed
            assert [s.split("?")[0] for s in proxy.refused] == [events_path]
        finally:
            publish(run.id, [text_end(message),
                             run_finished_success(thread_id=run.thread_id, run_id=str(run.id),
                                                  result=None)])
            wait_published()
            AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED)
            context.close()
