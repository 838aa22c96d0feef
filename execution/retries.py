"""What a segment's failure means for its run: retry later, or fail with plain words.

A provider SDK's own retries (``MODEL_MAX_RETRIES``, seconds apart) do not outlast a
rate limit or an outage of minutes. A transient provider failure therefore ends the
segment and the run waits ``retrying``; its next attempt goes on from the last
checkpoint after an exponential backoff (``MODEL_RETRY_BACKOFF_SECONDS``, doubled each
time up to ``MODEL_RETRY_BACKOFF_MAX_SECONDS``, or the provider's ``Retry-After``), at
most ``MODEL_RUN_RETRIES`` times per run. Permanent errors (a bad key, a refused
request) fail at once: retrying them changes nothing.

The provider packages are optional extras, so exceptions are recognised by the package
that defines them (``PROVIDER_MODULES``), what their public classes carry
(``status_code``, ``response``) and their names along the class hierarchy, never
imported.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass

from django.conf import settings

# HTTP statuses worth another try later: timeouts, conflicts, rate limits, server errors.
TRANSIENT_STATUSES = {408, 409, 425, 429}
# Exception classes (by name, anywhere in the MRO) of a request that never got an answer:
# the OpenAI / Anthropic SDKs' connection and timeout errors, httpx's transport errors.
TRANSIENT_NAMES = {
    "APIConnectionError", "APITimeoutError", "TransportError", "TimeoutException",
    "RemoteProtocolError", "ConnectError", "ReadError", "ReadTimeout", "WriteTimeout",
    "PoolTimeout", "ConnectTimeout", "StreamClosedError",
}
# Modules whose frames mark an exception as the provider's, not the agent's (a malformed
# JSON body raised by our own tool is a bug, not a blip).
PROVIDER_MODULES = ("openai", "anthropic", "ollama", "httpx", "httpcore", "langchain_openai",
                    "langchain_anthropic", "langchain_ollama", "groq", "mistralai", "google",
                    "botocore", "cohere", "together", "fireworks")
PLAIN_BY_STATUS = {
    400: "The model provider refused the request (400)",
    401: "The model provider refused the credentials (401)",
    403: "The model provider refused access (403)",
    404: "The model provider does not know the model (404)",
    408: "The model provider timed out (408)",
    409: "The model provider reported a conflict (409)",
    413: "The request was too large for the model provider (413)",
    422: "The model provider could not process the request (422)",
    429: "The model provider is rate-limiting requests (429)",
}


@dataclass(frozen=True)
class Failure:
    """A segment's exception, judged."""

    transient: bool
    reason: str  # plain words, for a person
    detail: str  # technical, for the admin and a disclosure
    retry_after: float | None = None  # the provider's Retry-After, seconds
    provider: bool = False  # the model provider's doing (else the agent's / ours)


def judge(exc: BaseException) -> Failure:
    """Transient provider failure, permanent provider error, or the agent's own error."""
    detail = f"{type(exc).__name__}: {exc}"[:10000]
    for item in _chain(exc):
        if type(item).__module__.split(".")[0] not in PROVIDER_MODULES:
            # Not the provider's (our own errors carry a status_code too): a malformed
            # stream is recognised by where it was raised.
            if isinstance(item, json.JSONDecodeError) and _from_provider(item):
                return Failure(transient=True, detail=detail, provider=True,
                               reason="The model provider sent an unreadable answer")
            continue
        status = _status(item)
        if status is not None:
            transient = status in TRANSIENT_STATUSES or status >= 500
            reason = PLAIN_BY_STATUS.get(status) or (
                f"The model provider returned an error ({status})")
            return Failure(transient=transient, reason=reason, detail=detail,
                           retry_after=_retry_after(item), provider=True)
        names = {cls.__name__ for cls in type(item).__mro__}
        if names & TRANSIENT_NAMES:
            timeout = any("Timeout" in name for name in names)
            return Failure(transient=True, detail=detail, provider=True, reason=(
                "The model provider did not answer in time" if timeout
                else "The connection to the model provider broke"))
    return Failure(transient=False, detail=detail,
                   reason=f"The agent failed ({type(exc).__name__})")


def backoff_seconds(retries_used: int, retry_after: float | None = None) -> float:
    """Seconds before the next attempt, ``retries_used`` attempts having been retried."""
    base = settings.MODEL_RETRY_BACKOFF_SECONDS * (2 ** retries_used)
    delay = min(base, settings.MODEL_RETRY_BACKOFF_MAX_SECONDS)
    if retry_after is not None:
        delay = min(max(delay, retry_after), max(settings.MODEL_RETRY_BACKOFF_MAX_SECONDS,
                                                 retry_after))
    return delay


def failed_words(failure: Failure, *, exhausted: bool = False) -> str:
    """The run's ``error`` for a person: what happened and what they can do."""
    if exhausted:
        return (f"{failure.reason}; it still failed after {settings.MODEL_RUN_RETRIES} "
                "retries. You can retry.")
    return f"{failure.reason}. You can retry."


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    item: BaseException | None = exc
    while item is not None and item not in seen and len(seen) < 10:
        seen.append(item)
        item = item.__cause__ or item.__context__
    return seen


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) and 400 <= status <= 599 else None


def _retry_after(exc: BaseException) -> float | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    try:
        value = headers.get("retry-after") if headers is not None else None
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: the backoff decides


def _from_provider(exc: BaseException) -> bool:
    frames = traceback.extract_tb(exc.__traceback__)
    return any(any(f"/{name}/" in frame.filename for name in PROVIDER_MODULES)
               for frame in frames)
