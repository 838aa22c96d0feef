"""A Platform stream held by the GRIP proxy (Pushpin): the web process answers and forgets.

With ``GRIP_URL`` set and a request that came through the proxy (its ``Grip-Sig`` valid
for the proxy's key), ``runs.stream``, a join (``…/runs/{run_id}/stream``) and the
stateless ``/runs/stream`` are answered at once: ``metadata`` and the segment's frames
stored so far (``lgapi.stream.translate``, the same translation as the direct stream),
then ``Grip-Hold: stream`` on the run's channel ``lg-<run id>`` with a next link. The
edge forwarder (``streams.edge``) publishes an empty item there for every stored event of
the run, whose ``prev-id`` never follows the hold's (``w<id>``, ours): so each event makes
the proxy follow the next link (at most 10 a second per link: Pushpin coalesces), and the
web process answers it from the store, after the id the proxy last had (``Grip-Last``),
translated for that link's modes. A link names the run, the user, the modes and where
the segment starts, signed, and is the same for every client of one run in the same
modes, so the proxy asks once for all of them. Access is checked again on each. At the
segment's end the answer has no hold, and the proxy ends the stream.

Stays direct (a stream the web process holds): ``on_disconnect=cancel`` and
``cancel_on_disconnect`` (the proxy tells the web process nothing of a client that goes).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.http import HttpRequest, HttpResponse
from gripcontrol import validate_sig

from agui.relay import TERMINAL, Wire
from lgapi import stream
from lgapi.http import LgError
from lgapi.runs import Plan, join_plan, visible_run
from runs.models import AgentRun
from streams.access import access_channel
from streams.keys import counter_key, event_key, platform_hold_channel, run_channel
from streams.publish import redis_client

_SIGNER = signing.Signer(salt="lgapi.hold")
# Seconds between the proxy's own visits to a held stream's link (besides one per event):
# a run whose end was never stored (Redis down) is noticed by its status then.
CHECK_SECONDS = 15
KEEPALIVE = ": keepalive\\n\\n; format=cstring; timeout=15"


def proxied(request: HttpRequest) -> bool:
    """A GRIP proxy is configured and signed this request with its key."""
    sig = request.headers.get("Grip-Sig")
    proxies = getattr(settings, "GRIP_PROXIES", None) or []
    return bool(sig) and any(p.get("key") and validate_sig(sig, p["key"], iss=p.get("verify_iss"))
                             for p in proxies)


def holdable(request: HttpRequest, plan: Plan) -> bool:
    """Whether this stream is held by the proxy (module docstring)."""
    return plan.live and plan.cancel_by is None and proxied(request)


def _stored(run_id: str, first: int = 1) -> tuple[list[tuple[int, Wire]], int]:
    """The run's stored events from id ``first`` on, and the last stored id."""
    name = run_channel(run_id)
    client = redis_client()
    top = int(client.get(counter_key(name)) or 0)
    ids = range(first, top + 1)
    raws = client.mget([event_key(name, i) for i in ids]) if ids else []
    return [(i, Wire.of(json.loads(raw)["data"]))
            for i, raw in enumerate(raws, start=first) if raw is not None], top


def _frames(plan: Plan, after: int, skip: int,
            read: tuple[list[tuple[int, Wire]], int] | None = None) -> tuple[str, bool, int]:
    """The segment after ``after`` translated, without the frames of events up to
    ``skip`` (the client has them); whether it ended; the last stored id."""
    stored, top = read or _stored(plan.run_id)
    wanted, messages = set(plan.modes), stream.Messages()
    out, opened = [], False
    for event_id, wire in stored:
        if event_id <= after:
            continue
        if not opened and wire.type not in ("RUN_STARTED", "RUN_ERROR"):
            continue  # the tail of an earlier segment
        opened = True
        frames = stream.translate(plan, wire, event_id, wanted, messages)
        if event_id > skip or wire.type in TERMINAL:
            out += frames
        if wire.type in TERMINAL:
            return "".join(out), True, top
    return "".join(out), False, top


def _link(plan: Plan, user: Any, after: int) -> str:
    value = json.dumps([plan.run_id, str(plan.run.thread_id), user.pk, sorted(plan.modes),
                        plan.subgraphs, after])
    path = f"/{settings.LANGGRAPH_API_PREFIX}threads/{plan.run.thread_id}/runs/" \
           f"{plan.run_id}/stream/held"
    return f"{path}?{urlencode({'h': _SIGNER.sign(value)})}"


def _answer(body: str, plan: Plan, user: Any, after: int, ended: bool, top: int,
            headers: dict[str, str]) -> HttpResponse:
    response = HttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    for key, value in headers.items():
        response[key] = value
    if not ended:
        response["Grip-Hold"] = "stream"
        # Also on the user's access channel: an account change closes it at once
        # (streams.access), as it closes the other held streams.
        response["Grip-Channel"] = (f"{platform_hold_channel(plan.run_id)}; prev-id=w{top}, "
                                    f"{access_channel(user.pk)}")
        response["Grip-Link"] = f"<{_link(plan, user, after)}>; rel=next; " \
                                f"timeout={CHECK_SECONDS}"
        response["Grip-Keep-Alive"] = KEEPALIVE
    return response


def hold(plan: Plan, user: Any, headers: dict[str, str]) -> HttpResponse:
    """The first answer of a held stream (``holdable``): ``metadata`` and what the
    segment has stored so far, held unless it has ended."""
    stored, top = read = _stored(plan.run_id)
    after, skip = plan.after, 0
    if plan.last_event_id is not None:
        after, skip = stream.segment_of(stored, plan.last_event_id)
    elif after < 0:  # a join without Last-Event-ID: the current segment
        after = stream.live_start_of(stored, top)
    body, ended, top = _frames(plan, after, skip, read)
    head = stream.frame("metadata", {"run_id": plan.run_id, "attempt": 1})
    return _answer(head + body, plan, user, after, ended, top, headers)


def next_link(request: HttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    """The proxy following a held stream's link: the frames after the id it last had
    (``Grip-Last``), access checked again for the link's user; no hold once the segment
    has ended (the proxy then ends the stream)."""
    gone = HttpResponse("", content_type="text/event-stream")  # ends the held stream
    if not proxied(request):
        return HttpResponse(status=404)
    try:
        run, thread, user_id, modes, subgraphs, after = json.loads(
            _SIGNER.unsign(request.GET.get("h", "")))
    except (signing.BadSignature, ValueError, TypeError):
        return HttpResponse(status=404)
    if (run, thread) != (run_id, thread_id):
        return HttpResponse(status=404)
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    try:
        row = visible_run(user, thread_id, run_id) if user is not None else None
    except LgError:  # not found, or not theirs any more: the hold ends
        row = None
    if row is None:
        return gone
    plan = join_plan(row, modes, None)
    plan.subgraphs = subgraphs
    last = _grip_last(request, platform_hold_channel(run_id))
    # The link's segment starts after ``after``: the proxy comes once per event, so read
    # only from there, not the run's whole log each time.
    body, ended, top = _frames(plan, after, last, _stored(run_id, first=after + 1))
    if not ended and row.status not in AgentRun.LIVE and top <= last:
        ended = True  # its end was never stored: nothing more will come
    return _answer(body, plan, user, after, ended, top, {})


def _grip_last(request: HttpRequest, name: str) -> int:
    """The id the proxy last had on ``name`` (``Grip-Last: <name>; last-id=w<id>``)."""
    for part in request.headers.get("Grip-Last", "").split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields and fields[0] == name:
            for field in fields[1:]:
                key, _, value = field.partition("=")
                if key == "last-id" and value.startswith("w") and value[1:].isascii() \
                        and value[1:].isdigit():
                    return int(value[1:])
    return 0
