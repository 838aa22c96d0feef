"""``execution.calls``: the HTTP client a cancel cuts. A request blocked on a silent
server is cut by ``Calls.abort`` from another thread at once, with ``CallAborted`` (a
BaseException: no SDK retries it); the server sees the connection closed; a cut segment
opens nothing new. Other requests, and errors, are httpx's as ever."""

from __future__ import annotations

import contextvars
import socket
import threading
import time

import httpx
import pytest

from execution.calls import CallAborted, http_client, segment_calls


class SilentServer:
    """Accepts connections, reads the request, answers nothing; notes when a client
    closes its end."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = threading.Event()
        self.closed = threading.Event()
        self.connections = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.accepted.set()
            try:
                while conn.recv(65536):  # the request, then nothing until the client closes
                    pass
                self.closed.set()
            except OSError:
                pass
            conn.close()


@pytest.fixture
def server():
    found = SilentServer()
    yield found
    found.sock.close()


def test_abort_cuts_a_blocked_call_and_the_next_one(server):
    client = http_client(timeout=30)
    outcome: list[BaseException] = []
    with segment_calls() as calls:
        def call() -> None:
            try:
                client.post(f"http://127.0.0.1:{server.port}/v1/chat/completions", json={})
            except BaseException as exc:  # noqa: BLE001 - what the call ended with
                outcome.append(exc)

        # LangGraph runs a step's tasks in threads the segment's context is copied into.
        worker = threading.Thread(target=contextvars.copy_context().run, args=(call,))
        worker.start()
        assert server.accepted.wait(5)
        time.sleep(0.1)  # the request sent; blocked reading the answer
        cut = time.monotonic()
        calls.abort()
        worker.join(5)
        assert not worker.is_alive()
        assert time.monotonic() - cut < 1
        assert len(outcome) == 1 and isinstance(outcome[0], CallAborted), outcome
        assert not isinstance(outcome[0], Exception)  # no `except Exception` retries it
        assert server.closed.wait(2), "the server never saw the connection closed"
        with pytest.raises(CallAborted):  # nothing new is opened for a cut segment
            client.get(f"http://127.0.0.1:{server.port}/again")
    assert server.connections == 1


def test_outside_a_segment_and_errors_are_httpx_as_ever(server):
    client = http_client(timeout=httpx.Timeout(0.3))
    with pytest.raises(httpx.ReadTimeout):  # SDKs tell a timeout by its httpx type
        client.get(f"http://127.0.0.1:{server.port}/")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(httpx.ConnectError):
        client.get(f"http://127.0.0.1:{port}/")
