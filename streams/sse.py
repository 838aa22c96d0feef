"""Browser SSE streams (django-eventstream): a run's AG-UI events, a user's queue changes.

- ``GET /api/runs/<id>/events/``: the run's AG-UI events, from its first stored event
  (or after ``Last-Event-ID`` / ``?lastEventId=``), then live. Owner or reviewer.
- ``GET /api/events/``: interrupt-queue changes (``{"type": "interrupts_changed",
  "run_id", "owner_id"?}``) from now on: the user's own, or everyone's for a reviewer.

Each SSE event is ``event: message``, ``id: <channel>:<n>``, ``data: <AG-UI event JSON>``.
Ids grow by one per channel; a client drops ids it has already seen (static/agentsite/
events.js does). Authentication (token or session) and access are checked before the
response starts: anonymous → 401, someone else's run → 404, never a 200 that then fails.

django-eventstream does the storage reads, the catch-up after Last-Event-ID and the
event formatting (its ``stream()``). Three things are ours, and why:
- the view: the library's ``events`` view checks access only inside the stream (a 200
  with a ``stream-error`` event) and keeps the request's database connection for the
  life of the stream; ours answers 401/404 first and gives the connection back;
- the Redis pub/sub reader (``streams.pubsub``, shared with AG-UI): the library's
  subscribes without waiting for the confirmation (the first stream of a process can
  miss what is published meanwhile) and stops for good when the Redis connection drops.
  Ours reconnects, and after every (re)subscription makes each open stream re-read
  the store from its last id;
- ``InOrder``, a filter on what the library's stream writes: it can repeat an event
  or pass pub/sub's order through; ours drops repeats and fills gaps from the store.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import unquote

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse
from django_eventstream.event import Event
from django_eventstream.eventrequest import EventRequest
from django_eventstream.utils import (
    add_default_headers,
    get_channelmanager,
    get_storage,
    make_id,
    sse_encode_event,
)
from django_eventstream.views import Listener, ListenerManager, get_listener_manager, stream
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from agentsite.api_docs import errors
from streams.channels import user_stream_channel
from streams.db import release_db_connections
from streams.keys import run_channel
from streams.pubsub import reader

# Query parameters of django-eventstream meant for a GRIP proxy, which we do not run:
# ``es-meta`` would name the channels and the user itself, ``recover`` needs the proxy.
PROXY_PARAMS = ("es-meta", "recover")



class _ToEventstream:
    """Feeds the process's pub/sub reader into django-eventstream's listener manager."""

    def __init__(self, manager: ListenerManager) -> None:
        self.manager = manager

    def on_message(self, body: dict[str, Any]) -> None:
        self.manager.add_to_queues(body["channel"], Event(
            body["channel"], body["event_type"], body["data"], id=body["pub_id"]))

    def on_subscribed(self) -> None:
        # Make every open stream re-read the store after its last id (``overflow``).
        manager = self.manager
        with manager.lock:
            listeners = {li for group in manager.listeners_by_channel.values() for li in group}
            for listener in listeners:
                listener.overflow = True
        for listener in listeners:
            listener.wake_threadsafe()


def ensure_reading() -> None:
    """Hook this process's pub/sub reader up once (instead of django-eventstream's own)."""
    manager = get_listener_manager()
    with manager.lock:
        if manager.redis_listener_started:
            return
        manager.redis_listener_started = True  # the library then starts none
    reader().add(_ToEventstream(manager))


class InOrder:
    """What leaves a stream: each event once, in id order, none skipped.

    django-eventstream's stream can repeat an event (one read from the store and then
    also delivered by pub/sub) and passes pub/sub's order and gaps through (two
    publishers of one channel can publish ids 6 and 7 in either order). Its output is
    whole SSE events, so this filter works on that text: a repeated id is dropped, and
    before an id that skips some, the missing ones are read from the store.
    """

    FILL_TRIES, FILL_WAIT = 5, 0.02  # an id is stored a moment after it is counted

    def __init__(self, last_ids: dict[str, str]) -> None:
        self.last = {channel: int(n) for channel, n in last_ids.items()}

    async def __call__(self, chunk: str) -> str:
        out = []
        for block in chunk.split("\n\n"):
            ident = next((line[4:] for line in block.split("\n") if line.startswith("id: ")),
                         None)
            if not block.startswith("event: message\n") or not ident or "," in ident:
                out.append(block)  # control events, and ids of several channels
                continue
            quoted, _, number = ident.rpartition(":")
            channel, n = unquote(quoted), int(number)
            last = self.last.get(channel)
            if last is not None and n <= last:
                continue  # sent already
            if last is not None and n > last + 1:
                out.extend(await self._missing(channel, last, n))
            self.last[channel] = n
            out.append(block)
        return "\n\n".join(out)

    async def _missing(self, channel: str, last: int, n: int) -> list[str]:
        read = sync_to_async(get_storage().get_events)
        for _ in range(self.FILL_TRIES):
            found = await read(channel, last, limit=n - last - 1)
            if len(found) == n - last - 1:
                break
            await asyncio.sleep(self.FILL_WAIT)
        return [sse_encode_event(e.type, e.data, event_id=make_id({channel: e.id})).rstrip("\n")
                for e in found]


async def _live(event_request: EventRequest, listener: Listener, in_order: InOrder):
    ensure_reading()
    async for chunk in stream(event_request, listener):
        chunk = await in_order(chunk)
        if chunk:
            yield chunk


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
    """Authenticate (DRF: token or session), check access, then hand over to the stream."""

    def perform_content_negotiation(self, request: Request, force: bool = False):
        # Errors are JSON whatever the Accept header (EventSource asks for
        # text/event-stream); a stream is a StreamingHttpResponse DRF does not render.
        return JSONRenderer(), JSONRenderer.media_type

    def open_stream(self, request: Request, channel: str, *,
                    from_start: bool) -> StreamingHttpResponse:
        for name in PROXY_PARAMS:
            if name in request.query_params:
                raise ValidationError({name: ["not supported"]})
        plain = request._request
        plain.user = request.user  # as DRF authenticated it (token or session)
        try:
            event_request = EventRequest(plain, view_kwargs={"channels": [channel]})
        except EventRequest.Error as err:
            raise ValidationError({"Last-Event-ID": [str(err)]}) from None
        if from_start and channel not in event_request.channel_last_ids:
            event_request.channel_last_ids[channel] = "0"  # from the first stored event
        try:
            in_order = InOrder(event_request.channel_last_ids)
        except ValueError:
            raise ValidationError({"Last-Event-ID": ["not an event id"]}) from None
        # Nothing below touches the database until the stream re-checks access
        # (which gives its connection back itself).
        release_db_connections()
        listener = Listener()
        listener.user_id = request.user.pk
        listener.channels = event_request.channels
        response = StreamingHttpResponse(_live(event_request, listener, in_order),
                                         content_type="text/event-stream")
        add_default_headers(response, request=plain)
        return response


class RunEventsView(EventStreamView):
    @extend_schema(operation_id="runs_events", parameters=[
                       LAST_EVENT_ID, OpenApiParameter("run_id", OpenApiTypes.UUID,
                                                       OpenApiParameter.PATH)],
                   responses={(200, "text/event-stream"): STREAM_RESPONSE,
                              **errors(400, 401, 404)})
    def get(self, request: Request, run_id: str) -> Any:
        """The run's AG-UI events: all stored ones (or those after Last-Event-ID), then live."""
        channel = run_channel(run_id)
        # The channel manager's check (cached for the stream's own first read).
        allowed = get_channelmanager().can_read_channel(request.user, channel)
        if not allowed:
            raise NotFound("run not found")
        return self.open_stream(request, channel, from_start=True)


class QueueEventsView(EventStreamView):
    @extend_schema(operation_id="events", parameters=[LAST_EVENT_ID],
                   responses={(200, "text/event-stream"): STREAM_RESPONSE,
                              **errors(400, 401)})
    def get(self, request: Request) -> Any:
        """Interrupt-queue changes from now on: own runs, or every run for a reviewer."""
        return self.open_stream(request, user_stream_channel(request.user), from_start=False)
