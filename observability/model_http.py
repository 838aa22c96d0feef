"""A chat model's HTTP attempts and its SDK's own retries, counted in our httpx client.

LangChain's callbacks see one model call however many HTTP requests it took: the OpenAI
and Anthropic SDKs retry a 408 / 409 / 429 / 5xx answer, a timeout or a dropped
connection inside the call (``max_retries``), so ``ModelCallMetrics`` cannot count those
retries. Models built on our client (``execution.calls.http_client``, which
``agents.chat_model`` gives OpenAI-compatible models) send every attempt through
``CountedTransport``, an httpx transport wrapper (httpx's public transport API) that
counts each attempt by model and outcome class, and each retry by the class of the
failure it retries.

An attempt is a retry when the SDK says so: these SDKs number their attempts in the
``x-stainless-retry-count`` request header (0 for the first). The failure it retries is
the last failed attempt made through this transport on the same thread (an SDK's sync
client retries in the thread of the call). The model is the request body's ``model``
(as the provider names it; the SDKs send it in every request).
"""

from __future__ import annotations

import json
import threading

import httpx

from observability import metrics

RETRY_HEADER = "x-stainless-retry-count"
UNKNOWN = "unknown"


def outcome_of(status: int) -> str:
    """An answer's class: ``429`` on its own (rate limits), else ``2xx`` ... ``5xx``."""
    return "429" if status == 429 else f"{status // 100}xx"


def _model_of(request: httpx.Request) -> str:
    if "json" not in request.headers.get("content-type", ""):
        return UNKNOWN
    try:
        body = json.loads(request.content)
    except (httpx.RequestNotRead, ValueError, TypeError):  # a streamed body; not JSON
        return UNKNOWN
    model = body.get("model") if isinstance(body, dict) else None
    return str(model)[:100] if model else UNKNOWN


def _is_retry(request: httpx.Request) -> bool:
    try:
        return int(request.headers.get(RETRY_HEADER, "0")) > 0
    except ValueError:
        return False


class CountedTransport(httpx.BaseTransport):
    """Sends with ``inner`` and counts the attempt in ``agentsite_model_http_attempts``
    (``outcome``: ``2xx`` ``3xx`` ``4xx`` ``429`` ``5xx``, ``timeout`` or ``connection``)
    and, when it retries an earlier one, in ``agentsite_model_http_retries`` by that
    attempt's failure class."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self._last = threading.local()  # this thread's last failed attempt's class

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        model = _model_of(request)
        if _is_retry(request):
            metrics.MODEL_HTTP_RETRIES.labels(model, getattr(self._last, "failure", UNKNOWN)
                                              ).inc()
        try:
            response = self.inner.handle_request(request)
        except httpx.TimeoutException:
            self._count(model, "timeout")
            raise
        except httpx.TransportError:  # refused, reset, a protocol error
            self._count(model, "connection")
            raise
        self._count(model, outcome_of(response.status_code))
        return response

    def _count(self, model: str, outcome: str) -> None:
        metrics.MODEL_HTTP_ATTEMPTS.labels(model, outcome).inc()
        self._last.failure = None if outcome in ("2xx", "3xx") else outcome

    def close(self) -> None:
        self.inner.close()
