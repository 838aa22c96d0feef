"""Browser streams held by a GRIP proxy (Pushpin): the web process answers and forgets.

With ``GRIP_URL`` set (settings: ``GRIP_PROXIES``), a stream request that came through the
proxy (its ``Grip-Sig`` checked by django-grip's middleware against the proxy's key) is
authenticated and checked by the stream views as before (``streams.sse``: anonymous → 401,
someone else's run → 404), then answered at once by django-eventstream's GRIP path: the
stored events after the client's id (our store, ``streams.storage.EventStore``) and
``Grip-Hold: stream`` on the channel ``events-<channel>`` with the last id sent as its
``prev-id``. The proxy holds the connection; ``streams.edge`` publishes every stored
event to it with ``id`` / ``prev-id``. When the proxy sees an id that does not follow
(an event missed), and every ``GRIP_RECHECK_SECONDS`` anyway, it asks the view again
through the hold's next link (``next_link``): the events after the last id it delivered,
and the access rule checked again for the user the link was signed for. Without
``GRIP_URL``, and for a request that did not come through the proxy, nothing here runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, unquote, urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import decorator_from_middleware
from django_eventstream.eventrequest import EventRequest
from django_eventstream.eventstream import EventPermissionError, get_events
from django_eventstream.utils import sse_error_response

from streams.db import release_db_connections


def enabled() -> bool:
    """A GRIP proxy is configured (``GRIP_URL``)."""
    return bool(getattr(settings, "GRIP_PROXIES", None))


def proxied(request: Any) -> bool:
    """The request came through our proxy (signed with its key)."""
    grip = getattr(request, "grip", None)
    return bool(grip is not None and grip.proxied)


def _no_cache(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


_SIGNER = signing.Signer(salt="streams.grip.next")


def _next_uri(path: str, channel: str, user: Any, after: str | None = None) -> str:
    """The hold's next link: the same for every stream of one user on one channel, so the
    proxy asks once for all of them (it shares requests to one URI, and makes at most
    10 such updates a second: Pushpin's handler). django-eventstream's own link has an
    expiry to the second in it, which makes nearly every stream's link its own.
    ``after``: the answer was cut short (more stored events than one answer carries);
    the proxy follows the link at once, without ``Grip-Last`` (it holds no channel yet),
    so the link says where to go on from."""
    value = f"{quote(channel)} {user.pk if user is not None else ''}"
    if after is not None:
        value += f" {after}"
    params = {"link": "next", "recover": "true", "es-hold": _SIGNER.sign(value)}
    return f"{path}?{urlencode(params)}"


def _instructed(event_request: EventRequest, request: Any, user: Any,
                name_now: bool = False) -> HttpResponse:
    """django-eventstream's GRIP answer (stored events + hold instructions), with our
    next link (``_next_uri``), asked for every ``GRIP_RECHECK_SECONDS`` (access checked
    again then) and whenever the proxy misses an id. An answer cut short (``more``: no
    hold, the proxy follows the link at once) carries its position in the link: the
    proxy sends no ``Grip-Last`` then, and without it the rest would be skipped."""
    (channel,) = event_request.channels
    try:
        events = get_events(event_request, user=user)
        response = events.to_grip_response(request)
    except EventPermissionError as exc:
        # No hold: the proxy sends this and closes the stream.
        return _no_cache(sse_error_response("forbidden", str(exc),
                                            {"channels": exc.channels}))
    finally:
        release_db_connections()
    if name_now and channel in events.channel_last_ids:
        from streams.sse import OPENING, opened_at, opening  # (sse imports this module)

        head = opening(opened_at(channel, events.channel_last_ids[channel]))
        response.content = response.content.replace(OPENING.encode(), head.encode(), 1)
    instruct = request.grip.instruct
    if instruct is not None and instruct.next_link:
        after = None
        if channel in events.channel_more:
            after = str(events.channel_items[channel][-1].id)
        instruct.set_next_link(_next_uri(request.path, channel, user, after),
                               timeout=settings.GRIP_RECHECK_SECONDS)
    return _no_cache(response)


def hold(request: Any, channel: str, after: int | None) -> HttpResponse:
    """Answer a proxied stream request whose access was checked: events of ``channel``
    after ``after`` (None: from now on, and the ``stream-open`` names now's id, as
    ``streams.sse`` does), then held by the proxy."""
    event_request = EventRequest()
    event_request.channels = [channel]
    event_request.channel_last_ids = {} if after is None else {channel: str(after)}
    event_request.is_next = event_request.is_recover = False
    event_request.user = request.user
    return _instructed(event_request, request, request.user, name_now=after is None)


def next_link(request: HttpRequest, channel: str | None) -> HttpResponse:
    """The proxy following a hold's next link (``link=next``: a missed id, a channel
    newly subscribed, or the periodic check): the channel and the user come from the
    link's signed ``es-hold`` (``_next_uri``), the last id the proxy delivered from
    ``Grip-Last`` (or, after an answer cut short, from the link); access is checked
    again for that user. ``channel``: the one the URL
    names, which the link must name too."""
    try:
        quoted, user_id, *after = _SIGNER.unsign(request.GET.get("es-hold", "")).split(" ")
        user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    except (signing.BadSignature, ValueError):
        return _no_cache(sse_error_response("bad-request", "Invalid request: next link."))
    finally:
        release_db_connections()
    held = unquote(quoted)
    if channel is not None and held != channel:
        return _no_cache(sse_error_response("bad-request", "Invalid request: channel."))
    event_request = EventRequest()
    event_request.channels = [held]
    last = request.grip.last.get(f"events-{quote(held)}") or (after[0] if after else None)
    event_request.channel_last_ids = {held: last} if last else {}
    event_request.is_next = event_request.is_recover = True
    event_request.user = user
    return _instructed(event_request, request, user)


def held(view: Callable[..., Any], channel_of: Callable[..., str | None]) -> Callable[..., Any]:
    """``view`` (a stream view) behind the GRIP middleware, with the proxy's next-link
    requests answered here; ``channel_of(**kwargs)``: the channel the URL names, or None
    (the queue stream: the user's channel is in the signed link). Without a proxy
    configured: ``view`` itself."""
    if not enabled():
        return view
    from django_grip import GripMiddleware  # reads GRIP_PROXIES when imported

    def stream(request: HttpRequest, **kwargs: Any) -> Any:
        if proxied(request) and request.GET.get("link") == "next":
            return next_link(request, channel_of(**kwargs))
        return view(request, **kwargs)

    wrapped = decorator_from_middleware(GripMiddleware)(stream)
    wrapped.csrf_exempt = True  # as DRF's views are; the session check is DRF's own
    return wrapped
