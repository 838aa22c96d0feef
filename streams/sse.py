"""Browser SSE streams: a run's AG-UI events, a user's queue changes.

- ``GET /api/runs/<id>/events/``: the run's AG-UI events, from its first stored event
  (or after ``Last-Event-ID`` / ``?lastEventId=``), then live. Owner or reviewer.
- ``GET /api/events/``: interrupt-queue changes (``{"type": "interrupts_changed",
  "run_id", "owner_id"?}``) from now on: the user's own, or everyone's for a reviewer.
  Its ``stream-open`` has the id of "now" (``<channel>:<n>``, the channel's last id), so
  a client refused or cut off before its first event resumes from there, not from a
  later "now" (which would skip what changed meanwhile). A change published while Redis
  was down is lost: once the stream's store is readable again after its fan-out dropped
  (``streams.follow``: ``outages``) it sends ``event: stream-reset``, and the pages
  re-read the queue.

Each SSE event is ``event: message``, ``id: <channel>:<n>``, ``data: <AG-UI event JSON>``
(django-eventstream's wire format, which static/agentsite/events.js reads: a padding
comment and ``event: stream-open`` first, ``event: keep-alive`` every 20 s of silence,
``event: stream-error`` when access is lost). Ids grow by one per channel; each event is
sent once, in id order, none skipped (``streams.follow``, shared with the AG-UI relay:
stored events, then live ones from the process's pub/sub reader, which reconnects and
then re-reads the store). Authentication (DRF: token or session) and access are checked
before the response starts: anonymous → 401, someone else's run → 404, never a 200 that
then fails; access is checked again every ``STREAM_RECHECK_SECONDS`` while the stream is
open, against the user as the database has it then, and at once when the user's access
may have changed (``streams.access``). An open stream holds no database connection.

A run's stream has the AG-UI relay's watchdog (``agui.relay.RunWatch``): when no event
comes for a while, or the store says events may be lost (Redis was down, ids missing),
it checks the run in the database, and when what the client was told is wrong twice in
a row (a segment paused or finished while Redis was down, so its events were never
stored) it sends the run's true state: the open AG-UI run closed (or a new RUN_STARTED),
STATE_SNAPSHOT, MESSAGES_SNAPSHOT and RUN_FINISHED (a paused run: with its interrupts)
or, for a failed run, RUN_ERROR. Those events are not stored, so their ids are
``<channel>:<n>.<k>``: after stored event ``n`` and before ``n + 1`` for events.js (which
drops an id it has seen and reopens on a skipped number); ``Last-Event-ID`` with one
resumes after ``n``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from importlib import import_module
from typing import Any
from urllib.parse import quote, unquote

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from redis.exceptions import RedisError
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from agentsite.api_docs import errors
from agentsite.models import ApiToken
from agentsite.token_auth import token_usable
from agui.open_state import read_back_async
from agui.relay import RunEvents, RunWatch, Wire, check_truth, fetch_truth
from observability import metrics
from streams import grip
from streams.channels import may_read, user_stream_channel
from streams.db import release_db_connections
from streams.eventstream import OPENING, no_cache, opened_at, opening, sse_event, stream_reset
from streams.follow import ChannelEvents, Event, Flush, Idle, Keepalive, Recheck
from streams.keys import run_channel

# Query parameters of django-eventstream meant for a GRIP proxy: only its own next-link
# requests carry them (streams.grip.next_link), never a client's; ``es-meta`` would name
# the channels and the user itself, ``recover`` needs the proxy.
PROXY_PARAMS = ("es-meta", "es-hold", "recover")
KEEPALIVE_AFTER = 20.0


def last_event_id(request: Request, channel: str) -> int | None:
    """The id after which ``channel`` resumes (``Last-Event-ID``, else the last non-empty
    ``lastEventId`` parameter), or None. Ids of other channels are ignored."""
    raw = request.headers.get("Last-Event-ID") or next(
        (v for v in reversed(request.query_params.getlist("lastEventId")) if v), "")
    if not raw:
        return None
    if raw == "error":
        raise ValidationError({"Last-Event-ID": ["cannot resume after stream-error"]})
    found = None
    for part in raw.split(","):
        name, sep, number = part.rpartition(":")
        if not sep or not name:
            raise ValidationError({"Last-Event-ID": ["failed to parse"]})
        if unquote(name) == channel:
            # ``<n>.<k>``: an event sent after stored event n (the run's true state).
            whole, dot, sub = number.partition(".")
            if not whole.isdigit() or (dot and not sub.isdigit()):
                raise ValidationError({"Last-Event-ID": ["not an event id"]})
            found = int(whole)
    return found


def credential(request: Request) -> tuple[str, str] | None:
    """What the stream was opened with, to check again: its API token, or its session."""
    if isinstance(request.auth, ApiToken):
        return "token", str(request.auth.pk)
    key = request.session.session_key if hasattr(request, "session") else None
    return ("session", key) if key else None


def _credential_valid(user: Any, held: tuple[str, str] | None) -> bool:
    if held is None:
        return True
    kind, key = held
    if kind == "token":
        return token_usable(key, user.pk)  # not revoked, not expired
    return import_module(settings.SESSION_ENGINE).SessionStore().exists(key)


def _still_allowed(user: Any, channel: str, held: tuple[str, str] | None = None) -> bool:
    """``may_read`` for the user as the database has it now (the request's user object is
    as it was at the open: active, its permissions cached by the first check), while the
    token or session it opened with (``held``) still exists."""
    try:
        now = get_user_model().objects.filter(pk=user.pk).first()  # may_read: active ones
        return now is not None and _credential_valid(now, held) and may_read(now, channel)
    finally:
        release_db_connections()


async def channel_stream(user: Any, channel: str, after: int | None,
                         run_id: str | None = None,
                         held: tuple[str, str] | None = None) -> AsyncIterator[str]:
    """The SSE text of ``channel``: events after ``after`` (None: from now on; the
    ``stream-open`` then carries now's id).
    ``run_id``: the channel is that run's, watched (module docstring). ``held``: the
    credential it was opened with (``credential``), checked with the access."""
    check = sync_to_async(_still_allowed)
    checked_at = time.monotonic()
    quoted = quote(channel)
    burst: list[str] = []
    watch = RunWatch() if run_id is not None else None
    async with (RunEvents(run_id) if run_id is not None else ChannelEvents(channel)) as events:
        events.surface = "run" if run_id is not None else "queue"  # its delivery latency
        if after is None:
            after = await events.counter()
            yield opening(opened_at(channel, after))
        else:
            yield OPENING
        began, last, sent = after, after, 0  # sent: events made here since stored event last
        outages = events.outages  # the queue stream's, told with a stream-reset
        events.user_id = str(user.pk)  # RECHECK when its access may have changed
        watch_every = settings.AGENTSITE_STREAM_WATCH_SECONDS
        recheck_after = settings.AGENTSITE_STREAM_RECHECK_SECONDS  # its user's access
        async for item in events.follow(after=after, idle=watch_every, idle_max=6 * watch_every,
                                        keepalive=KEEPALIVE_AFTER, flushes=True):
            due = isinstance(item, Recheck) or time.monotonic() - checked_at >= recheck_after
            if due and not isinstance(item, Flush | Keepalive):  # access: checked again
                if not await check(user, channel, held):
                    yield sse_event("stream-error", json.dumps({
                        "condition": "forbidden",
                        "text": f"Permission denied to channels: {channel}",
                        "channels": [channel]}), event_id="error")
                    return
                checked_at = time.monotonic()
            match item:
                case Flush():  # nothing more waiting: a burst goes in one send
                    if burst:
                        yield "".join(burst)
                        burst.clear()
                case Keepalive():
                    yield "event: keep-alive\ndata:\n\n"
                case Idle() if watch is not None:
                    for event in await _watchdog(watch, events, run_id, began):
                        sent += 1
                        burst.append(sse_event("message", event.data,
                                               event_id=f"{quoted}:{last}.{sent:03d}"))
                case Idle() if events.outages > outages and not events.unreadable:
                    # The queue's watchdog: what changed in an outage was never stored,
                    # so the client re-reads the queue (events.js: onGap).
                    outages = events.outages
                    burst.append(stream_reset(channel))
                case Event(id=last, data=data):
                    sent = 0
                    if watch is not None:
                        watch.saw(data)
                        data = data.data
                    burst.append(sse_event("message", data, event_id=f"{quoted}:{last}"))


async def _watchdog(watch: RunWatch, events: RunEvents, run_id: str, began: int) -> list[Any]:
    """The run's true state if what the client was told is wrong (twice in a row), else
    nothing. A stream that began after stored event ``began`` first learns, once, what
    the client had been told before it (the store, read only when needed)."""
    truth = await check_truth(run_id)
    if began and watch.since is not None and not watch.agrees(truth):
        try:  # back to the run's last RUN_STARTED or end: all the watch needs
            earlier = await read_back_async(events.client, events.channel, last=began)
        except (RedisError, OSError):
            pass  # the next check tries again
        else:  # None: expired, nothing to learn
            watch.seed([Wire(e.type, e.data) for e in earlier or ()])
    if watch.strike(truth):
        return watch.bridge(await fetch_truth(run_id))
    return []


LAST_EVENT_ID = OpenApiParameter(
    "Last-Event-ID", str, OpenApiParameter.HEADER, required=False,
    description="Resume after this event id (the browser sends it on reconnect); "
                "or the query parameter lastEventId.")
# One server-sent event (the content of text/event-stream is a sequence of these).
SSE_EVENT = {"type": "object", "required": ["event"], "properties": {
    "event": {"type": "string", "description": "message, stream-open, keep-alive, "
                                               "stream-reset or stream-error"},
    "id": {"type": "string", "description": "<channel>:<n>"},
    "data": {"type": "string", "description": "the event JSON"}}}
STREAM_RESPONSE = OpenApiResponse(
    SSE_EVENT, description="text/event-stream: `event: message`, `id: <channel>:<n>`, "
                                  "`data: <event JSON>`; `event: keep-alive` every 20 s.")


class EventStreamView(APIView):
    """Authenticate (DRF: token or session), check access, then stream."""

    def perform_content_negotiation(self, request: Request, force: bool = False):
        # Errors are JSON whatever the Accept header (EventSource asks for
        # text/event-stream); a stream is a StreamingHttpResponse DRF does not render.
        return JSONRenderer(), JSONRenderer.media_type

    def open_stream(self, request: Request, channel: str, *, from_start: bool,
                    run_id: str | None = None) -> StreamingHttpResponse:
        for name in PROXY_PARAMS:
            if name in request.query_params:
                raise ValidationError({name: ["not supported"]})
        after = last_event_id(request, channel)
        if after is None and from_start:
            after = 0  # from the first stored event
        if grip.proxied(request):
            # Behind a GRIP proxy (streams.grip): it holds the stream, we answer now.
            return grip.hold(request, channel, after)
        # The stream touches the database only to check access again and, for a run, its
        # watchdog's checks (each gives its connection back itself).
        release_db_connections()
        return no_cache(StreamingHttpResponse(
            metrics.stream_counted(
                channel_stream(request.user, channel, after, run_id, credential(request)),
                surface="run" if run_id is not None else "queue"),
            content_type="text/event-stream"))


class RunEventsView(EventStreamView):
    @extend_schema(operation_id="runs_events", parameters=[
                       LAST_EVENT_ID, OpenApiParameter("run_id", OpenApiTypes.UUID,
                                                       OpenApiParameter.PATH)],
                   responses={(200, "text/event-stream"): STREAM_RESPONSE,
                              **errors(400, 401, 404)})
    def get(self, request: Request, run_id: str) -> Any:
        """The run's AG-UI events: all stored ones (or those after Last-Event-ID), then live."""
        channel = run_channel(run_id)
        if not may_read(request.user, channel):
            raise NotFound("run not found")
        return self.open_stream(request, channel, from_start=True, run_id=str(run_id))


class QueueEventsView(EventStreamView):
    @extend_schema(operation_id="events", parameters=[LAST_EVENT_ID],
                   responses={(200, "text/event-stream"): STREAM_RESPONSE,
                              **errors(400, 401)})
    def get(self, request: Request) -> Any:
        """Interrupt-queue changes from now on: own runs, or every run for a reviewer."""
        return self.open_stream(request, user_stream_channel(request.user), from_start=False)
