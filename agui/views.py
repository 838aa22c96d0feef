"""AG-UI 1.0 over HTTP: ``POST /agui/<agent>/`` (run / resume) and ``.../connect/``.

The graph never runs here. A run request calls the same services as every other
surface (``run_start``, ``interrupts_answer``), then relays that segment's events
from Redis (``agui.relay``) as ``text/event-stream`` written by
ag-ui-protocol's ``EventEncoder``, and ends after its RUN_FINISHED / RUN_ERROR.
The worker never depends on this connection: a slow or vanished client only
loses its own stream.

Why not ag-ui-langgraph's endpoint or its mapping (ag-ui-langgraph 0.0.47, checked):
``LangGraphAgent.run`` executes the graph inside the request (``astream_events``) and
resumes by writing ``Command(resume=...)`` itself, so it would bypass the worker and
the locked decision service; its interrupt mapping (``lg_interrupt_to_agui``) puts
the payload under ``metadata.langgraph.raw``, defaults ``reason`` to
``langgraph:interrupt`` and has no response schema unless the payload carries one,
where our contract is ``metadata`` = the raw value, and ``reason`` and the response
schema from the interrupt's format (``hitl.formats``; see ``agui/events.py``). What we
reuse is ag-ui-protocol's classes and encoder; ``bench/agui_peer.py`` runs that
package's endpoint as the yardstick.

Postgres: every DB step is one short ``sync_to_async`` call that closes its
connection (returning it to Django's pool) before the stream starts, so an open
stream holds no database connection.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import BaseEvent, RunAgentInput
from ag_ui.encoder import EventEncoder
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rest_framework import exceptions

from agentsite import parsers, timing
from agentsite.api_errors import UNAVAILABLE, unavailable_body
from agentsite.errors import Conflict, NotFound, ServiceError, pydantic_fields
from agentsite.limits import check_answer_size
from agentsite.request_transaction import request_transaction
from agentsite.throttles import retry_after
from agentsite.token_auth import Scope, door_authenticate, require_scope
from agui import outcomes
from agui.events import run_started, state_without_messages
from agui.framing import Frames
from agui.relay import (
    TERMINAL,
    RunEvents,
    Wire,
    check_truth,
    fetch_truth,
    relay_segment,
)
from agui.sql import runs_holding
from execution.checkpointer import thread_values
from execution.lifecycle import interrupts_answer
from hitl.decide import Answer
from hitl.selectors import can_decide
from observability import metrics
from runs import registry
from runs.models import AgentRun, Conversation
from runs.queue import not_waiting
from runs.services import run_start
from streams.db import release_db_connections
from streams.eventstream import no_cache
from streams.follow import Flush, Keepalive
from streams.keys import counter_key, run_channel
from streams.publish import redis_client

# Client thread ids that are not UUIDs map to a stable UUID (our conversation ids are UUIDs).
THREAD_NAMESPACE = uuid.UUID("5b0f3c57-6d0e-4b7e-9a39-5e3bd6a0a9a1")
_encoder = EventEncoder()


def thread_uuid(thread_id: str, user_id: int) -> uuid.UUID:
    """The conversation id for a client's thread id. A name like "my-chat" is per user, so
    two users' "my-chat" never meet and nobody can probe which names others use."""
    try:
        return uuid.UUID(thread_id)
    except ValueError:
        return uuid.uuid5(THREAD_NAMESPACE, f"{user_id}:{thread_id}")


class ApiError(Exception):
    """An answer given before any streaming (a JSON error body with a status)."""

    def __init__(self, status: int, code: str, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.status, self.body = status, {"code": code, "detail": detail, **extra}

    @classmethod
    def from_service(cls, err: ServiceError) -> ApiError:
        extra = {**err.extra, **({"fields": err.fields} if err.fields else {})}
        return cls(err.status, err.code, err.detail, **extra)

    def response(self) -> JsonResponse:
        body = {k: v for k, v in self.body.items() if k != "retry_after"}
        response = JsonResponse(body, status=self.status)
        if self.status == 401:
            response["WWW-Authenticate"] = "Token"
        if self.status == 429:
            response["Retry-After"] = retry_after(self.body.get("retry_after", 1))
        return response


def _db_step(func: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``func`` in a worker thread and give its DB connection back right after."""

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        finally:
            release_db_connections()  # back to the pool, not held by the stream

    return sync_to_async(run, thread_sensitive=False)


def _authenticate(request: HttpRequest, scope: str | None = None) -> tuple[Any, Any]:
    """The user and the token (None for a session), as every door authenticates
    (``agentsite.token_auth.door_authenticate``: 401, 403 outside ``scope``, 429)."""
    try:
        return door_authenticate(request, scope)
    except ServiceError as err:
        raise ApiError.from_service(err) from None


def _allow(auth: Any, scope: str) -> None:
    """403 ``insufficient_scope`` before anything is read or changed, when the request's
    token does not allow ``scope``."""
    try:
        require_scope(auth, scope)
    except ServiceError as err:
        raise ApiError.from_service(err) from None


def _parse(model: type[BaseModel], raw: bytes) -> Any:
    try:
        # Depth, NUL and surrogate checks of the API's parser (a 400 naming the place).
        data = parsers.loads(raw or b"null")
    except ServiceError as err:
        raise ApiError.from_service(err) from None
    except exceptions.ParseError as exc:
        raise ApiError(422, "invalid", f"body is not JSON: {exc.detail}",
                       fields={"body": ["not JSON"]}) from None
    try:
        return model.model_validate(data)
    except ValidationError as err:
        fields = pydantic_fields(err)
        raise ApiError(422, "invalid", "invalid RunAgentInput: " + ", ".join(
            f"{k}: {v[0]}" for k, v in fields.items()), fields=fields) from None


def _last_user_text(body: RunAgentInput) -> str:
    if not body.messages or body.messages[-1].role != "user":
        return ""
    content = body.messages[-1].content
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") or "" for part in content or [])


@dataclass
class Plan:
    """What the stream relays, decided (and committed) before streaming starts."""

    run_id: str
    after: int  # relay the first segment whose RUN_STARTED comes after this event id
    client_thread_id: str
    client_run_id: str
    prelude: list[BaseEvent] = field(default_factory=list)  # rebuilt events (connect)
    live: bool = True


def _channel_counter(run_id: object) -> int:
    return int(redis_client().get(counter_key(run_channel(run_id))) or 0)


def _run_or_resume(request: HttpRequest, agent: str, raw: bytes) -> Plan:
    # One transaction, authentication included: the services join it
    # (agentsite.request_transaction); it commits before the stream starts.
    with request_transaction(refusals=(ServiceError, ApiError)):
        return _run_or_resume_in(request, agent, raw)


def _run_or_resume_in(request: HttpRequest, agent: str, raw: bytes) -> Plan:
    user, auth = _authenticate(request)
    if registry.get(agent) is None:
        raise ApiError(404, "unknown_agent", f"unknown agent {agent!r}")
    body: RunAgentInput = _parse(RunAgentInput, raw)
    # A resume answers (decide); anything else starts a run.
    _allow(auth, Scope.ANSWER if body.resume else Scope.START)
    tid = thread_uuid(body.thread_id, user.pk)
    try:
        if body.resume:
            ids = [entry.interrupt_id for entry in body.resume]
            for entry in body.resume:
                check_answer_size(entry.payload, f"resume.{entry.interrupt_id}.payload")
            # Someone else's thread answers like a missing one (the same 404, whether or not
            # the ids exist there).
            run_ids = {run.pk for run in runs_holding(thread_id=str(tid), agent=agent,
                                                      interrupt_ids=ids)
                       if can_decide(user, run)}
            if not run_ids:
                raise NotFound(f"thread has no interrupt {ids[0]!r}", code="unknown_interrupt",
                               extra={"interrupt_ids": ids})
            if len(run_ids) > 1:
                raise Conflict("the interrupts belong to different runs", code="mixed_runs")
            run_id = run_ids.pop()
            # Read before the decision commits: the resumed segment's events come after.
            after = _channel_counter(run_id)
            answered = interrupts_answer(actor=user, run_id=run_id, surface="agui", answers=[
                Answer(interrupt_id=e.interrupt_id, status=e.status, payload=e.payload)
                for e in body.resume])
            plan = Plan(run_id=str(run_id), after=after, client_thread_id=body.thread_id,
                        client_run_id=body.run_id)
            if answered.waiting:
                # Some interrupts are still open: nothing resumes; say which.
                ids = {"thread_id": body.thread_id, "run_id": body.run_id}
                plan.prelude = [run_started(**ids), outcomes.closing(answered.run, **ids)]
                plan.live = False
            return plan
        props = body.forwarded_props if isinstance(body.forwarded_props, dict) else {}
        agent_input = props.get("input") if isinstance(props.get("input"), dict) else None
        run = run_start(owner=user, agent=agent, input=agent_input,
                        message=_last_user_text(body), thread_id=str(tid),
                        create_thread=True, surface="agui")
    except ServiceError as err:
        if err.code == "thread_busy" and err.extra.get("pending_interrupt_ids"):
            ids = err.extra["pending_interrupt_ids"]
            raise ApiError(409, "pending_interrupts",
                           f"thread has pending interrupts {', '.join(ids)}: resume them "
                           "(RunAgentInput.resume) or cancel the run first",
                           run_id=err.extra.get("run_id"), pending_interrupt_ids=ids) from None
        raise ApiError.from_service(err) from None
    return Plan(run_id=str(run.id), after=0, client_thread_id=body.thread_id,
                client_run_id=body.run_id)


class ConnectInput(BaseModel):
    """What connect needs; a whole RunAgentInput is accepted too (extra fields ignored)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore")
    thread_id: str = Field(alias="threadId", min_length=1)
    run_id: str | None = Field(default=None, alias="runId")


def _connect(request: HttpRequest, agent: str, raw: bytes) -> Plan:
    user, _ = _authenticate(request, Scope.READ)
    if registry.get(agent) is None:
        raise ApiError(404, "unknown_agent", f"unknown agent {agent!r}")
    body: ConnectInput = _parse(ConnectInput, raw)
    conversation = Conversation.objects.filter(pk=thread_uuid(body.thread_id, user.pk),
                                               agent=agent).first()
    if conversation is None or not can_decide(user, conversation):
        # Same answer for "not there" and "not yours": thread ids are not disclosed.
        raise ApiError(404, "unknown_thread", f"thread {body.thread_id!r} not found")
    client_run_id = body.run_id or str(uuid.uuid4())
    # Not a run waiting behind the thread's (runs.queue): the one holding it, whose
    # questions are what a client connecting should see.
    run = not_waiting(conversation.runs.all()).order_by("-created_at").first()
    if run is not None and run.status in AgentRun.LIVE:
        return Plan(run_id=str(run.id), after=-1, client_thread_id=body.thread_id,
                    client_run_id=client_run_id)
    # Not live: rebuild from the checkpoint (state) and the business tables (the rest).
    events = outcomes.rebuilt(run, thread_id=body.thread_id, run_id=client_run_id,
                              messages=list(conversation.messages.all()),
                              state=_checkpoint_state(conversation))
    return Plan(run_id=str(run.id) if run else "", after=0, client_thread_id=body.thread_id,
                client_run_id=client_run_id, prelude=events, live=False)


def _checkpoint_state(conversation: Conversation) -> dict[str, Any]:
    if registry.get(conversation.agent) is None:
        return {}
    # From the checkpointer, not a compiled graph: web processes run no graph code.
    return state_without_messages(thread_values(conversation.thread_id))


async def _live_start(events: RunEvents) -> int:
    """For connect to a live run: where its current segment begins in the store."""
    top = await events.counter()
    stored = await events.stored(1, top)
    kinds = [e.type for _, e in stored]
    starts = [i for i, k in enumerate(kinds) if k == "RUN_STARTED"]
    if not starts or any(k in ("RUN_FINISHED", "RUN_ERROR") for k in kinds[starts[-1]:]):
        return top  # the current segment has not started yet: wait for its RUN_STARTED
    return stored[starts[-1]][0] - 1


# The client checks the ids of its own run: our segment ids become the client's.
_CLIENT_IDS = ("RUN_STARTED", "RUN_FINISHED")


async def _stream(plan: Plan) -> AsyncIterator[str]:
    frames = Frames()  # a cut answer never ends clean (agui.framing)
    # Events go out a burst at a time (what is waiting, one send), not one send each.
    burst = [frames.start()]
    for event in plan.prelude:
        made = Wire.event(event)
        burst.append(frames.event(made.type, made.data))
    yield "".join(burst)
    burst.clear()
    if not plan.live:
        return
    ids = {"thread_id": plan.client_thread_id, "run_id": plan.client_run_id}
    async with RunEvents(plan.run_id) as events:
        events.surface = "agui"  # its delivery latency
        after = plan.after if plan.after >= 0 else await _live_start(events)
        # Lost events (Redis was down when the segment ended): the run's true state from
        # the database, the same events a pause or a connect gives, never an error.
        async for item in relay_segment(
                events, after=after, check=lambda: check_truth(plan.run_id),
                truth=lambda: fetch_truth(plan.run_id), started=lambda: run_started(**ids),
                flushes=True):
            if isinstance(item, Flush | Keepalive):  # nothing more waiting: send the burst
                if isinstance(item, Keepalive):
                    burst.append(frames.keepalive())
                if burst:
                    yield "".join(burst)
                    burst.clear()
                continue
            if timing.enabled and item.type in TERMINAL:
                timing.mark(plan.run_id, "relay_end")
            # As published (already the encoder's JSON), or made here (started).
            wire = item if isinstance(item, Wire) else Wire.event(item)
            burst.append(frames.event(wire.type, wire.with_ids(**ids)
                                      if wire.type in _CLIENT_IDS else wire.data))
    if burst:  # the segment's end, and what came with it
        yield "".join(burst)


async def _respond(request: HttpRequest, prepare: Callable[..., Plan],
                   agent: str) -> HttpResponse:
    if request.method != "POST":
        return JsonResponse({"code": "method_not_allowed", "detail": "use POST"}, status=405)
    try:
        raw = request.body
    except RequestDataTooBig:
        return ApiError(413, "too_large", "The request body is over "
                        f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes.").response()
    view_in = time.time() if timing.enabled else 0.0
    try:
        plan = await _db_step(prepare)(request, agent, raw)
    except ApiError as err:
        return err.response()
    except UNAVAILABLE as exc:
        response = JsonResponse(unavailable_body(exc), status=503)
        response["Retry-After"] = "2"
        return response
    if timing.enabled:  # benchmarks only (AGENTSITE_TIMING_LOG)
        arrived = getattr(request, "scope", {}).get("agentsite.arrived", view_in)
        timing.mark(plan.run_id, "http_in", arrived)
        timing.mark(plan.run_id, "view_in", view_in)
        timing.mark(plan.run_id, "service_done")
        timing.mark(plan.client_thread_id, f"run={plan.run_id}")  # the client's name for it
    response = StreamingHttpResponse(metrics.stream_counted(_stream(plan), surface="agui"),
                                     content_type=_encoder.get_content_type())
    no_cache(response)
    return response


@csrf_exempt  # token clients send no CSRF token; session auth enforces CSRF itself (DRF)
async def agui_run(request: HttpRequest, agent: str) -> HttpResponse:
    """Start a run, or resume one (``RunAgentInput.resume``), and stream that segment."""
    return await _respond(request, _run_or_resume, agent)


@csrf_exempt
async def agui_connect(request: HttpRequest, agent: str) -> HttpResponse:
    """Join a thread: replay + follow its live run, or rebuild it from checkpoint + tables."""
    return await _respond(request, _connect, agent)

