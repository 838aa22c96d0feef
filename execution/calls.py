"""Model calls a cancel can cut: an HTTP client whose connections a segment can close.

A cancelled segment stops between graph steps (``execution.executor``), but a model call
in flight is one step: left alone, it runs to its end (minutes, for a stalled provider),
its SDK may retry it, and its tokens are spent for a run nobody waits for. So the chat
model's HTTP client (``http_client``, which ``agents.chat_model`` gives OpenAI-compatible
models; adopters pass it as ``http_client=`` to theirs) opens its connections through
``_Backend``: each read or write of a connection registers, while it runs, with the
segment whose context makes it (``segment_calls``: LangGraph copies the context into the
threads that run a step's tasks). ``Calls.abort`` (the cancel's stop notice,
``execution.stop``) shuts those sockets down, which wakes a read blocked on them, and
the read raises ``CallAborted``. That is a ``BaseException``, like ``KeyboardInterrupt``:
the SDKs, LangChain's and LangGraph's retries catch ``Exception`` only, so nothing
retries the call; httpcore closes the connection on its way out.
"""

from __future__ import annotations

import contextvars
import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

from observability.model_http import CountedTransport

# ``httpcore.SOCKET_OPTION``'s shape, spelled out (httpcore exports no name for it).
SocketOptions = Iterable[tuple[int, int, int | bytes] | tuple[int, int, None, int]] | None


class CallAborted(BaseException):
    """The segment making this call was superseded (cancelled): the call is cut."""


class Calls:
    """The connections one segment is reading from or writing to now."""

    def __init__(self) -> None:
        self.aborted = threading.Event()
        self._lock = threading.Lock()
        self._busy: set[socket.socket] = set()

    def enter(self, sock: socket.socket | None) -> None:
        if self.aborted.is_set():
            raise CallAborted("the run was cancelled")
        if sock is not None:
            with self._lock:
                self._busy.add(sock)

    def leave(self, sock: socket.socket | None) -> None:
        if sock is not None:
            with self._lock:
                self._busy.discard(sock)
        if self.aborted.is_set():
            raise CallAborted("the run was cancelled")

    def abort(self) -> None:
        """Cut every call of the segment, now and from now on."""
        self.aborted.set()
        with self._lock:
            busy = list(self._busy)
        for sock in busy:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked recv (close does not)
            except OSError:
                pass  # closed meanwhile


_current: contextvars.ContextVar[Calls | None] = contextvars.ContextVar(
    "agentsite_segment_calls", default=None)


@contextmanager
def segment_calls() -> Iterator[Calls]:
    """The calls made in this context (and the threads it is copied into) from here on."""
    calls = Calls()
    token = _current.set(calls)
    try:
        yield calls
    finally:
        _current.reset(token)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self.inner = inner

    @contextmanager
    def _busy(self) -> Iterator[None]:
        calls = _current.get()
        if calls is None:
            yield
            return
        sock = self.inner.get_extra_info("socket")
        calls.enter(sock)
        try:
            yield
        finally:
            calls.leave(sock)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        with self._busy():
            return self.inner.read(max_bytes, timeout)

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        with self._busy():
            self.inner.write(buffer, timeout)

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        with self._busy():
            return _Stream(self.inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self.inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: SocketOptions = None) -> httpcore.NetworkStream:
        calls = _current.get()
        if calls is not None:
            calls.enter(None)  # a cut segment opens nothing new
        return _Stream(self.inner.connect_tcp(host, port, timeout, local_address,
                                              socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: SocketOptions = None) -> httpcore.NetworkStream:
        return _Stream(self.inner.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


def _as_httpx(exc: Exception) -> Exception:
    # httpx's own transport raises its exceptions, not httpcore's (same names): the SDKs
    # tell a timeout from a connection error by them.
    found = getattr(httpx, type(exc).__name__, None)
    if isinstance(found, type) and issubclass(found, httpx.TransportError):
        return found(str(exc))
    return exc


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]) -> None:
        self.inner = inner

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.inner
        except httpcore.TimeoutException as exc:
            raise _as_httpx(exc) from exc
        except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise _as_httpx(exc) from exc

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


class AbortableTransport(httpx.BaseTransport):
    """httpx's transport over httpcore's pool (as ``httpx.HTTPTransport``), on
    connections a segment's ``Calls.abort`` can cut."""

    def __init__(self, *, verify: bool = True, limits: httpx.Limits | None = None) -> None:
        limits = limits or httpx.Limits(max_connections=100, max_keepalive_connections=20)
        self.pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(verify=verify),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry, network_backend=_Backend())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host,
                             port=request.url.port, target=request.url.raw_path),
            headers=request.headers.raw, content=request.stream,
            extensions=request.extensions)
        try:
            response = self.pool.handle_request(core)
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError,
                httpcore.UnsupportedProtocol) as exc:
            raise _as_httpx(exc) from exc
        return httpx.Response(status_code=response.status, headers=response.headers,
                              stream=_ResponseStream(response.stream),
                              extensions=response.extensions)

    def close(self) -> None:
        self.pool.close()


def http_client(**options: Any) -> httpx.Client:
    """An ``httpx.Client`` whose calls a cancel cuts (module doc): pass it to a chat model
    (``ChatOpenAI(http_client=...)``, ``init_chat_model(..., http_client=...)``).
    ``options``: httpx.Client's (``timeout``, ``headers``...), not ``transport``."""
    # Each attempt counted, the SDK's own retries too (observability.model_http).
    return httpx.Client(transport=CountedTransport(AbortableTransport()), **options)
