"""Browser streams held by a GRIP proxy (Pushpin): the web process answers and forgets.

With ``GRIP_URL`` set (settings: ``GRIP_PROXIES``), a stream request that came through the
proxy (its ``Grip-Sig`` checked by django-grip's middleware against the proxy's key) is
authenticated and checked by the stream views as before (``streams.sse``: anonymous → 401,
someone else's run → 404), then answered at once by django-eventstream's GRIP path: the
stored events after the client's id (our store, ``streams.storage.EventStore``) and
``Grip-Hold: stream`` on the channel ``events-<channel>`` with the last id sent as its
``prev-id``. The proxy holds the connection; ``streams.edge`` publishes every stored
event to it with ``id`` / ``prev-id``. When the proxy sees an id that does not follow
(an event missed), and as often as a direct stream checks anyway (``_next_check``:
``STREAM_WATCH_SECONDS`` after a new hold, then up to six times that for a run's stream;
``STREAM_RECHECK_SECONDS`` for the queue's), it asks the view again
through the hold's next link (``next_link``): the events after the last id it delivered,
and the access rule checked again for the user the link was signed for. A run's answer
also gets the direct stream's run watchdog (``_watchdog``: the run's true state when its
end was never stored). The queue stream's ``stream-open`` names "now" (``streams.sse``).
Without ``GRIP_URL``, and for a request that did not come through the proxy, nothing
here runs.
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
from django_eventstream.utils import sse_encode_event, sse_error_response
from gripcontrol import Channel

from agui.open_state import read_back
from agui.relay import RunWatch, Wire, run_truth, truth_events
from runs.models import AgentRun
from streams.access import access_channel
from streams.channels import checked
from streams.db import release_db_connections
from streams.eventstream import OPENING, no_cache, opened_at, opening
from streams.keys import QUEUE_RESET_CHANNEL, is_queue_channel, run_of


def enabled() -> bool:
    """A GRIP proxy is configured (``GRIP_URL``)."""
    return bool(getattr(settings, "GRIP_PROXIES", None))


def proxied(request: Any) -> bool:
    """The request came through our proxy (signed with its key)."""
    grip = getattr(request, "grip", None)
    return bool(grip is not None and grip.proxied)


_SIGNER = signing.Signer(salt="streams.grip.next")


def _next_uri(path: str, channel: str, user: Any, after: str | None = None,
              mark: str = "") -> str:
    """The hold's next link: the same for every stream of one user on one channel, so the
    proxy asks once for all of them (it shares requests to one URI, and makes at most
    10 such updates a second: Pushpin's handler). django-eventstream's own link has an
    expiry to the second in it, which makes nearly every stream's link its own.
    ``after``: the answer was cut short (more stored events than one answer carries);
    the proxy follows the link at once, without ``Grip-Last`` (it holds no channel yet),
    so the link says where to go on from. ``mark``: the run watchdog's (``_watchdog``)."""
    value = f"{quote(channel)} {user.pk if user is not None else ''}"
    if after is not None or mark:
        value += f" {after or ''}"
    if mark:
        value += f" {mark}"
    params = {"link": "next", "recover": "true", "es-hold": _SIGNER.sign(value)}
    return f"{path}?{urlencode(params)}"


def _told(channel: str, last: int) -> RunWatch | None:
    """What a client with every stored event of ``channel`` up to ``last`` was told about
    its run (read back to the last RUN_STARTED or end, ``agui.open_state.read_back``: what
    the watch needs); None when that cannot be known (some of them expired)."""
    tail = read_back(channel, last=last)
    if tail is None:
        return None
    watch = RunWatch()
    for event in tail:
        watch.saw(Wire(event.type, event.data))
    return watch


def _watchdog(channel: str, last: int, mark: str) -> tuple[str, str]:
    """The direct stream's run watchdog (``streams.sse``, ``agui.relay.RunWatch``) for a
    held run stream, checked on each next-link answer (a newly held channel 1 s after,
    a missed id, ``_next_check``). When the run is no longer live and the
    stored events up to ``last`` (what the stream has) do not say how it stands (its end
    was published while Redis was down, so never stored), the link is marked
    ``s<last>`` and asked again in ``STREAM_WATCH_SECONDS``; if it still disagrees then, the
    answer carries the run's true state (ids ``<channel>:<last>.<k>``, as the direct
    stream's) and the link is marked ``b<last>``, so later checks at the same id do not
    send it again.
    Returns (SSE text to add to the answer, the link's mark)."""
    run_id = run_of(channel)
    if run_id is None:
        return "", ""
    if mark == f"b{last}":
        return "", mark  # told already
    try:
        truth = run_truth(run_id)
        if truth is not None and truth.status in AgentRun.LIVE:
            return "", ""
        watch = _told(channel, last)
        if watch is None or watch.agrees(truth):
            return "", ""
        if mark != f"s{last}":
            return "", f"s{last}"
        bridge = watch.bridge(truth_events(run_id))
    except ValueError:  # not a run id
        return "", ""
    finally:
        release_db_connections()
    if not bridge:
        return "", ""
    text = "".join(sse_encode_event("message", event.data, escape=True,
                                    event_id=f"{quote(channel)}:{last}.{k:03d}")
                   for k, event in enumerate(bridge, start=1))
    return text, f"b{last}"


def _next_check(channel: str, *, first: bool, confirming: bool) -> int:
    """Seconds until the proxy asks a hold's next link again (whole seconds: Pushpin's).
    As often as a direct stream looks (``streams.sse``): a run stream's watchdog after
    ``STREAM_WATCH_SECONDS`` on a new hold and to confirm a disagreeing check, then at
    most six times that; access every ``STREAM_RECHECK_SECONDS``."""
    recheck = max(1, round(settings.AGENTSITE_STREAM_RECHECK_SECONDS))
    if run_of(channel) is None:
        return recheck
    watch = max(1, round(settings.AGENTSITE_STREAM_WATCH_SECONDS))
    return watch if first or confirming else min(recheck, 6 * watch)


def _instructed(event_request: EventRequest, request: Any, user: Any,
                name_now: bool = False, mark: str | None = None) -> HttpResponse:
    """django-eventstream's GRIP answer (stored events + hold instructions), with our
    next link (``_next_uri``), asked for as often as a direct stream checks
    (``_next_check``: access checked again, and the run watchdog) and whenever the proxy
    misses an id. An answer cut short (``more``: no hold, the proxy follows the link at
    once) carries its position in the link: the proxy sends no ``Grip-Last`` then, and
    without it the rest would be skipped. A next-link answer that holds is checked by the
    run watchdog (``_watchdog``; ``mark``: the link's). A stream's first answer is not:
    opens stay one access check and one store read each (10,000 at once); its link is
    asked ``STREAM_WATCH_SECONDS`` later (Pushpin 1.36 asks a newly held channel's after
    1 s too)."""
    (channel,) = event_request.channels
    try:
        events = get_events(event_request, user=user)
        response = events.to_grip_response(request)
    except EventPermissionError as exc:
        # No hold: the proxy sends this and closes the stream.
        return no_cache(sse_error_response("forbidden", str(exc),
                                            {"channels": exc.channels}))
    finally:
        release_db_connections()
    if name_now and channel in events.channel_last_ids:
        head = opening(opened_at(channel, events.channel_last_ids[channel]))
        response.content = response.content.replace(OPENING.encode(), head.encode(), 1)
    instruct = request.grip.instruct
    if instruct is not None and user is not None and user.is_authenticated:
        # Closed by the proxy when the user's access may have changed (streams.access).
        instruct.add_channel(Channel(access_channel(user.pk)))
    if instruct is not None and is_queue_channel(channel):
        # Told to re-read the queue when queue changes may have been lost (streams.edge).
        instruct.add_channel(Channel(QUEUE_RESET_CHANNEL))
    if instruct is not None and instruct.next_link:
        items = events.channel_items.get(channel) or []
        after, first = None, mark is None
        if channel in events.channel_more:
            after, mark = str(items[-1].id), ""
        elif first:
            mark = ""
        else:
            last = items[-1].id if items else events.channel_last_ids.get(channel)
            bridge, mark = _watchdog(channel, int(last or 0), mark)
            if bridge:
                response.content += bridge.encode()
        # A first disagreeing check ("s") is confirmed this soon: a second one in a row
        # sends the run's true state, as on a direct stream.
        timeout = _next_check(channel, first=first, confirming=mark.startswith("s"))
        instruct.set_next_link(_next_uri(request.path, channel, user, after, mark),
                               timeout=timeout)
    return no_cache(response)


def hold(request: Any, channel: str, after: int | None) -> HttpResponse:
    """Answer a proxied stream request whose access was checked: events of ``channel``
    after ``after`` (None: from now on, and the ``stream-open`` names now's id, as
    ``streams.sse`` does), then held by the proxy."""
    event_request = EventRequest()
    event_request.channels = [channel]
    event_request.channel_last_ids = {} if after is None else {channel: str(after)}
    event_request.is_next = event_request.is_recover = False
    event_request.user = request.user
    with checked(request.user, channel):  # by the view: not again in get_events
        return _instructed(event_request, request, request.user, name_now=after is None)


def next_link(request: HttpRequest, channel: str | None) -> HttpResponse:
    """The proxy following a hold's next link (``link=next``: a missed id, a channel
    newly subscribed, or the periodic check): the channel and the user come from the
    link's signed ``es-hold`` (``_next_uri``), the last id the proxy delivered from
    ``Grip-Last`` (or, after an answer cut short, from the link); access is checked
    again for that user. ``channel``: the one the URL
    names, which the link must name too."""
    try:
        quoted, user_id, *rest = _SIGNER.unsign(request.GET.get("es-hold", "")).split(" ")
        after, mark = (rest + ["", ""])[:2]
        user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    except (signing.BadSignature, ValueError):
        return no_cache(sse_error_response("bad-request", "Invalid request: next link."))
    finally:
        release_db_connections()
    held = unquote(quoted)
    if channel is not None and held != channel:
        return no_cache(sse_error_response("bad-request", "Invalid request: channel."))
    event_request = EventRequest()
    event_request.channels = [held]
    last = request.grip.last.get(f"events-{quote(held)}") or after or None
    event_request.channel_last_ids = {held: last} if last else {}
    event_request.is_next = event_request.is_recover = True
    event_request.user = user
    return _instructed(event_request, request, user, mark=mark)


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
