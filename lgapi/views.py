"""The Platform API's endpoints: thin translations onto the same rows and services as
every other door (docs/langgraph-api.md has the table of what is supported)."""

from __future__ import annotations

from typing import Any

from django.db.models import F, OuterRef, Q, Subquery
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from execution.lifecycle import run_cancel
from lgapi import hold, runs, shapes, stream
from lgapi.bodies import (
    AssistantSearch,
    History,
    RunCreate,
    ThreadCount,
    ThreadCreate,
    ThreadPatch,
    ThreadSearch,
)
from lgapi.http import LgError, body, endpoint, ok, streaming, validated
from lgapi.state import interrupts_of, latest, thread_history, thread_state, values_of
from observability import metrics
from runs import registry
from runs.models import AgentRun, Conversation
from runs.threads import conversation_create, conversation_delete, conversation_update
from streams.db import release_db_connections
from streams.eventstream import no_cache

VERSION = "agentsite"

# --- Server and assistants ---------------------------------------------------------


def _info(request: HttpRequest, user: Any) -> HttpResponse:
    return ok({"version": VERSION, "langgraph_py_version": None,
               "flags": {"assistants": True, "crons": False, "store": False,
                         "langsmith": False}, "metadata": {}})


def _assistant(assistant_id: str) -> registry.Agent:
    agent = shapes.agent_for(assistant_id)
    if agent is None:
        raise LgError(404, f"Assistant {assistant_id} not found")
    return agent


def _assistants_matching(query: AssistantSearch | Any) -> list[registry.Agent]:
    found = [a for a in registry.all_agents()
             if (not query.graph_id or a.name == query.graph_id)
             and (not query.name or query.name.lower() in a.name.lower())
             and all(shapes.assistant_json(a)["metadata"].get(k) == v
                     for k, v in (query.metadata or {}).items())]
    return found


def _assistants_search(request: HttpRequest, user: Any) -> HttpResponse:
    query = body(request, AssistantSearch)
    items = [shapes.assistant_json(a) for a in _assistants_matching(query)]
    key = query.sort_by if query.sort_by != "updated_at" else "created_at"
    items.sort(key=lambda a: a[key], reverse=query.sort_order == "desc")
    return ok(items[query.offset:query.offset + query.limit])


def _assistants_count(request: HttpRequest, user: Any) -> HttpResponse:
    return ok(len(_assistants_matching(body(request, AssistantSearch))))


def _assistant_get(request: HttpRequest, user: Any, assistant_id: str) -> HttpResponse:
    return ok(shapes.assistant_json(_assistant(assistant_id)))


def _assistant_graph(request: HttpRequest, user: Any, assistant_id: str) -> HttpResponse:
    # The graph's nodes are known to the worker only (web processes never load a graph):
    # the outline every graph has.
    agent = _assistant(assistant_id)
    return ok({"nodes": [{"id": "__start__", "type": "schema", "data": "__start__"},
                         {"id": agent.name, "type": "runnable", "data": agent.name},
                         {"id": "__end__", "type": "schema", "data": "__end__"}],
               "edges": [{"source": "__start__", "target": agent.name},
                         {"source": agent.name, "target": "__end__"}]})


def _assistant_schemas(request: HttpRequest, user: Any, assistant_id: str) -> HttpResponse:
    agent = _assistant(assistant_id)
    context = agent.input_schema()
    # What a run's ``input`` takes: ``messages`` (its last human message is the run's
    # message) beside the agent's own input fields (lgapi.runs.split_input).
    messages = {"type": "array", "items": {"type": "object"},
                "description": "the last human message is the run's message"}
    given = {**context, "properties": {"messages": messages,
                                       **context.get("properties", {})},
             "title": f"{agent.name} input"}
    given.pop("additionalProperties", None)  # messages is one more key
    return ok({"graph_id": agent.name, "input_schema": given,
               "output_schema": None, "state_schema": None, "config_schema": None,
               "context_schema": context})


def _assistant_subgraphs(request: HttpRequest, user: Any, assistant_id: str,
                         **_: Any) -> HttpResponse:
    _assistant(assistant_id)
    return ok({})


def _assistant_versions(request: HttpRequest, user: Any, assistant_id: str) -> HttpResponse:
    return ok([shapes.assistant_json(_assistant(assistant_id))])


# --- Threads ------------------------------------------------------------------------

# A thread's status is its latest run's; a run waiting behind it does not hide that the
# run holding the thread is interrupted (or busy).
_LATEST = Subquery(AgentRun.objects.filter(conversation=OuterRef("pk"))
                   .exclude(status=AgentRun.Status.WAITING)
                   .order_by("-created_at").values("status")[:1])


def _thread_out(conversation: Conversation, latest_status: str | None) -> dict[str, Any]:
    saved = latest(conversation.thread_id) if latest_status is not None else None
    status = shapes.thread_status(latest_status)
    return shapes.thread_json(conversation, latest_status, values_of(saved),
                              interrupts_of(saved) if status == "interrupted" else {})


def _latest_status(conversation: Conversation) -> str | None:
    return (conversation.runs.exclude(status=AgentRun.Status.WAITING)
            .order_by("-created_at").values_list("status", flat=True).first())


def _threads_create(request: HttpRequest, user: Any) -> HttpResponse:
    data = body(request, ThreadCreate)
    if data.supersteps:
        raise LgError(422, "Not supported here: supersteps (a thread's state is written by "
                      "its runs only).")
    conversation, _ = conversation_create(owner=user, thread_id=data.thread_id,
                                          metadata=data.metadata, if_exists=data.if_exists)
    return ok(_thread_out(conversation, _latest_status(conversation)))


def _searched(user: Any, query: ThreadCount) -> Any:
    if query.values:
        raise LgError(422, "Not supported here: a values filter (state is not indexed); "
                      "filter by metadata or status.")
    # As the REST API lists conversations: the user's own (a reviewer reads others' by id).
    qs = Conversation.objects.filter(owner=user).annotate(latest_status=_LATEST)
    if query.metadata:
        qs = qs.filter(metadata__contains=query.metadata)
    if query.status == "idle":
        qs = qs.filter(Q(latest_status__isnull=True)
                       | Q(latest_status__in=shapes.THREAD_STATUSES["idle"]))
    elif query.status:
        qs = qs.filter(latest_status__in=shapes.THREAD_STATUSES[query.status])
    return qs


def _threads_search(request: HttpRequest, user: Any) -> HttpResponse:
    query = body(request, ThreadSearch)
    qs = _searched(user, query)
    if query.ids:
        qs = qs.filter(pk__in=query.ids)
    field = {"thread_id": "id", "status": "latest_status",
             "state_updated_at": "updated_at"}.get(query.sort_by, query.sort_by)
    order = F(field).desc(nulls_last=True) if query.sort_order == "desc" else F(field).asc()
    page = list(qs.order_by(order, "id")[query.offset:query.offset + query.limit])
    return ok([_thread_out(c, c.latest_status) for c in page])


def _threads_count(request: HttpRequest, user: Any) -> HttpResponse:
    return ok(_searched(user, body(request, ThreadCount)).count())


def _thread_get(request: HttpRequest, user: Any, thread_id: str) -> HttpResponse:
    conversation = runs.visible_thread(user, thread_id)
    return ok(_thread_out(conversation, _latest_status(conversation)))


def _thread_patch(request: HttpRequest, user: Any, thread_id: str) -> HttpResponse:
    data = body(request, ThreadPatch)
    conversation = conversation_update(actor=user, conversation_id=runs.parse_uuid(thread_id),
                                       metadata=data.metadata)
    return ok(_thread_out(conversation, _latest_status(conversation)))


def _thread_delete(request: HttpRequest, user: Any, thread_id: str) -> HttpResponse:
    conversation_delete(actor=user, conversation_id=runs.parse_uuid(thread_id))
    return HttpResponse(status=204)


def _thread_state(request: HttpRequest, user: Any, thread_id: str,
                  checkpoint_id: str | None = None) -> HttpResponse:
    conversation = runs.visible_thread(user, thread_id)
    state = thread_state(conversation.thread_id, checkpoint_id)
    if state is None:
        raise LgError(404, f"Checkpoint {checkpoint_id} not found")
    return ok(state)


def _thread_state_write(request: HttpRequest, user: Any, thread_id: str) -> HttpResponse:
    runs.visible_thread(user, thread_id)
    raise LgError(422, "Not supported here: writing a thread's state (update_state); its "
                  "runs write it, and a person answers an interrupt with command.resume.")


def _thread_state_at(request: HttpRequest, user: Any, thread_id: str,
                     checkpoint_id: str) -> HttpResponse:
    return _thread_state(request, user, thread_id, checkpoint_id)


def _thread_state_post(request: HttpRequest, user: Any, thread_id: str) -> HttpResponse:
    """``POST /threads/{id}/state/checkpoint`` (``get_state(checkpoint=...)``)."""
    data = body(request, History)
    checkpoint = (data.checkpoint or {}).get("checkpoint_id")
    return _thread_state(request, user, thread_id,
                         checkpoint if isinstance(checkpoint, str) else None)


def _thread_history(request: HttpRequest, user: Any, thread_id: str) -> HttpResponse:
    conversation = runs.visible_thread(user, thread_id)
    if request.method == "GET":
        data = validated(History, {k: v for k, v in request.GET.items()})
    else:
        data = body(request, History)
    return ok(thread_history(conversation.thread_id, limit=data.limit,
                             before=data.before_id(), metadata=data.metadata))


# --- Runs ---------------------------------------------------------------------------


def _location(plan: runs.Plan) -> dict[str, str]:
    path = f"/threads/{plan.run.thread_id}/runs/{plan.run_id}"
    return {"Content-Location": path, "Location": f"{path}/stream"}


def _sse(plan: runs.Plan, headers: dict[str, str]) -> HttpResponse:
    response = StreamingHttpResponse(metrics.stream_counted(stream.stream(plan),
                                                            surface="langgraph"),
                                     content_type="text/event-stream")
    no_cache(response)
    for key, value in headers.items():
        response[key] = value
    return response


def _runs_create(request: HttpRequest, user: Any, thread_id: str | None = None) -> HttpResponse:
    plan = runs.start(user, body(request, RunCreate), thread_id)
    return ok(shapes.run_json(plan.run), headers={"Content-Location": _location(plan)[
        "Content-Location"]})


def _runs_list(request: HttpRequest, user: Any, thread_id: str) -> HttpResponse:
    conversation = runs.visible_thread(user, thread_id)
    try:
        limit = min(max(int(request.GET.get("limit", 10)), 1), 1000)
        offset = max(int(request.GET.get("offset", 0)), 0)
    except ValueError:
        raise LgError(422, "limit and offset must be integers") from None
    qs = runs.thread_runs(conversation)
    wanted = request.GET.get("status")
    if wanted:
        ours = [s for s, theirs in shapes.RUN_STATUS.items() if theirs == wanted]
        if not ours:
            raise LgError(422, f"unknown run status {wanted[:40]!r}")
        qs = qs.filter(status__in=ours)
    return ok([shapes.run_json(r) for r in qs[offset:offset + limit]])


def _run_get(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> HttpResponse:
    return ok(shapes.run_json(runs.visible_run(user, thread_id, run_id)))


def _run_delete(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> HttpResponse:
    runs.visible_run(user, thread_id, run_id)
    raise LgError(409, "A run keeps its audit trail and is never deleted; cancel it instead.")


def _run_cancel(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> HttpResponse:
    run = runs.visible_run(user, thread_id, run_id)
    if request.GET.get("action", "interrupt") not in ("interrupt", "rollback"):
        raise LgError(422, "action must be interrupt or rollback")
    # Both actions cancel: the run and its checkpoints stay, for the audit trail.
    run = run_cancel(actor=user, run_id=run.id, surface=runs.SURFACE)
    return ok(shapes.run_json(run), status=202 if request.GET.get("wait") in (None, "0",
                                                                               "false") else 200)


def _modes_param(request: HttpRequest) -> list[str]:
    # The SDKs send ``stream_mode=`` (empty) when the caller names none: the run's own.
    modes = [m for m in request.GET.getlist("stream_mode") if m]
    if modes:
        RunCreate(assistant_id="-", stream_mode=modes).modes()  # 422 for an unknown one
    return modes


@streaming
def runs_stream(request: HttpRequest, user: Any, thread_id: str | None = None) -> Any:
    plan = runs.start(user, body(request, RunCreate), thread_id)
    headers = _location(plan) if thread_id else {}
    if hold.holdable(request, plan):  # behind Pushpin: the proxy holds the stream
        return hold.hold(plan, user, headers)
    return _sse(plan, headers)


@streaming
def runs_wait(request: HttpRequest, user: Any, thread_id: str | None = None) -> Any:
    plan = runs.start(user, body(request, RunCreate), thread_id, waits=True)
    return _Waiting(plan, _location(plan) if thread_id else {})


@streaming
def run_join(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> Any:
    run = runs.visible_run(user, thread_id, run_id)
    return _Waiting(runs.join_plan(run, [], None), {})


@streaming
def run_stream(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> Any:
    run = runs.visible_run(user, thread_id, run_id)
    plan = runs.join_plan(run, _modes_param(request), request.headers.get("Last-Event-ID"))
    if request.GET.get("cancel_on_disconnect") == "true":
        plan.cancel_by = user  # as on_disconnect="cancel": the run goes with the client
    if hold.holdable(request, plan):  # behind Pushpin: the proxy holds the stream
        return hold.hold(plan, user, {})
    return _sse(plan, {})


@csrf_exempt
@require_GET
def run_stream_held(request: HttpRequest, thread_id: str, run_id: str) -> HttpResponse:
    """The proxy following a held stream's next link (``lgapi.hold``): signed by us,
    asked by the proxy only."""
    try:
        return hold.next_link(request, thread_id, run_id)
    finally:
        release_db_connections()


class _Waiting:
    """An answer given once the run's segment has ended (``lgapi.http.streaming``)."""

    def __init__(self, plan: runs.Plan, headers: dict[str, str]) -> None:
        self.plan, self.headers = plan, headers

    async def __call__(self) -> HttpResponse:
        await stream.wait_end(self.plan)
        return ok(await stream.outcome_async(self.plan), headers=self.headers)


# --- Out of scope ---------------------------------------------------------------------


def _refuse_write(request: HttpRequest, user: Any, **_: Any) -> HttpResponse:
    raise LgError(501, "Not implemented here: assistants are the registered agents "
                  "(AGENTSITE_AGENT_MODULES); they are not created, changed or versioned "
                  "through this API.")


@csrf_exempt  # answered the same to anyone, with or without a session
def not_implemented(request: HttpRequest, **_: Any) -> HttpResponse:
    return ok({"detail": "Not implemented here: crons, the store, and writing assistants "
               "(see docs/langgraph-api.md)."}, status=501)


@csrf_exempt
def not_found(request: HttpRequest, **_: Any) -> HttpResponse:
    return ok({"detail": "Not Found"}, status=404)


info = endpoint(get=_info)
assistants_search = endpoint(post=_assistants_search)
assistants_count = endpoint(post=_assistants_count)
assistants = endpoint(post=_refuse_write)
assistant = endpoint(get=_assistant_get, patch=_refuse_write, delete=_refuse_write)
assistant_latest = endpoint(post=_refuse_write)
assistant_graph = endpoint(get=_assistant_graph)
assistant_schemas = endpoint(get=_assistant_schemas)
assistant_subgraphs = endpoint(get=_assistant_subgraphs)
assistant_versions = endpoint(post=_assistant_versions)
threads = endpoint(post=_threads_create)
threads_search = endpoint(post=_threads_search)
threads_count = endpoint(post=_threads_count)
thread = endpoint(get=_thread_get, patch=_thread_patch, delete=_thread_delete)
thread_state_view = endpoint(get=_thread_state, post=_thread_state_write)
thread_state_checkpoint = endpoint(get=_thread_state_at)
thread_state_checkpoint_post = endpoint(post=_thread_state_post)
thread_history_view = endpoint(get=_thread_history, post=_thread_history)
thread_runs = endpoint(post=_runs_create, get=_runs_list)
stateless_runs = endpoint(post=_runs_create)
run = endpoint(get=_run_get, delete=_run_delete)
run_cancel_view = endpoint(post=_run_cancel)
