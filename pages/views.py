"""The chat pages: conversation list, new chat, the chat page and its fragments.

Views stay thin: the transcript comes from ``pages.transcript``; every write goes through
a service (``run_start``, ``hitl.card_answer`` for a card's answer, ``run_cancel``,
``run_retry``). Who may see a conversation: its owner, and reviewers
(hitl.decide_interrupt, a superuser included: hitl.selectors), who may answer its cards,
cancel its run and retry it when it failed, as on every surface, but not write in it;
anyone else gets a 404.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Count, OuterRef, Q, Subquery
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agentsite.errors import Conflict, InvalidInput, ServiceError
from agentsite.parsers import MAX_DEPTH, check_value
from execution.lifecycle import run_cancel, run_retry
from hitl import policies
from hitl.card_answer import card_answer
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide, is_reviewer
from pages.forms import input_fields, input_from_post
from pages.retrying import retry_banner
from pages.transcript import card_interrupts, interrupt_card, run_blocks
from runs import registry
from runs.models import AgentRun, Conversation
from runs.queue import not_waiting
from runs.services import run_start
from streams.channels import user_stream_channel

PENDING = AgentInterrupt.Status.PENDING


# --- access ------------------------------------------------------------------------------------

def _conversation(request: HttpRequest, conversation_id: Any) -> tuple[Conversation, bool]:
    """(conversation, is_owner) or 404: the owner, or a reviewer (no composer)."""
    try:
        pk = uuid.UUID(str(conversation_id))
    except ValueError:
        raise Http404("no such conversation") from None
    conversation = Conversation.objects.select_related("owner").filter(pk=pk).first()
    if conversation is None or not can_decide(request.user, conversation):
        raise Http404("no such conversation")
    return conversation, conversation.owner_id == request.user.pk


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


# --- building the page -----------------------------------------------------------------------

def _composer(conversation: Conversation, is_owner: bool, latest: AgentRun | None,
              pending: int, *, error: str = "", text: str = "",
              answerable: int | None = None) -> dict[str, Any]:
    reason = ""
    if not is_owner:
        reason = ("You are viewing someone else's conversation as a reviewer: you can answer "
                  "its questions, cancel its run and retry it when it failed, not write in it.")
    elif latest is not None and latest.status == AgentRun.Status.PAUSED and pending \
            and answerable == 0:
        reason = "Waiting for a reviewer to answer the question above."
    elif latest is not None and latest.status == AgentRun.Status.PAUSED and pending:
        reason = ("Answer the question above to continue." if pending == 1 else
                  f"Answer the {pending} questions above to continue.")
    elif latest is not None and latest.status == AgentRun.Status.RETRYING:
        reason = ("The agent is waiting to retry after a model provider failure. Wait for "
                  "it, or cancel it.")
    elif latest is not None and latest.status in AgentRun.ACTIVE:
        reason = f"The agent is working ({latest.get_status_display().lower()}). " \
                 "Wait for it to finish, or cancel it."
    return {
        "disabled": bool(reason), "reason": reason, "error": error, "text": text,
        "is_owner": is_owner,
        # Whoever sees the page may cancel (hitl.selectors.can_decide: owner or reviewer).
        "can_cancel": latest is not None and latest.status in AgentRun.ACTIVE,
        "latest": latest,
        "send_url": reverse("pages:send", args=[conversation.pk]),
        "cancel_url": reverse("pages:cancel", args=[conversation.pk]),
    }


def _chat_context(request: HttpRequest, conversation: Conversation, is_owner: bool, *,
                  card_errors: dict | None = None, composer_error: str = "",
                  composer_text: str = "") -> dict[str, Any]:
    for _ in range(3):
        runs = list(AgentRun.objects.filter(conversation=conversation)
                    .order_by("created_at", "id"))
        blocks = run_blocks(conversation, runs, viewer=request.user,
                             card_errors=card_errors, request=request)
        # The page's script continues after the events read just now, which came after
        # the rows: a run that changed in between (its events are published after its
        # commit, so they may be among them) is read again, else the page would show
        # the older status and wait for events it has skipped.
        # The run the page follows (status, composer, live events): the newest not
        # waiting behind another (runs.queue), so a paused run's question stays the one
        # to answer.
        at = next((i for i in range(len(runs) - 1, -1, -1)
                   if runs[i].status != AgentRun.Status.WAITING), len(runs) - 1)
        if not runs or AgentRun.objects.filter(pk=runs[at].pk).values_list(
                "updated_at", flat=True).first() == runs[at].updated_at:
            break
    latest = runs[at] if runs else None
    latest_block = blocks[at] if blocks else None
    agent = registry.get(conversation.agent)
    return {
        "conversation": conversation,
        "agent": agent,
        "is_owner": is_owner,
        "blocks": blocks,
        "latest": latest,
        "latest_block": latest_block,
        "retrying": retry_banner(latest),
        "composer": _composer(conversation, is_owner, latest,
                              latest_block.get("pending", 0) if latest_block else 0,
                              error=composer_error, text=composer_text,
                              answerable=latest_block.get("answerable") if latest_block else None),
        "events_url": reverse("run-events", args=[latest.id]) if latest else "",
        "last_event_id": (f"run-{latest.id}:{latest_block['last_event_id']}"
                          if latest and latest_block.get("last_event_id") else ""),
        "queue_url": reverse("queue-events"),
        "queue_channel": user_stream_channel(request.user),
        # A page without JavaScript reloads itself while one of these runs works.
        "live_statuses": [str(s) for s in AgentRun.LIVE],
    }


# --- pages ---------------------------------------------------------------------------------------

@login_required
@require_GET
def conversation_list(request: HttpRequest) -> HttpResponse:
    latest = not_waiting(AgentRun.objects.filter(conversation=OuterRef("pk"))).order_by(
        "-created_at")
    pending = Count("runs__interrupts", filter=Q(runs__interrupts__status=PENDING))
    mine = (Conversation.objects.filter(owner=request.user)
            .annotate(pending=pending, status=Subquery(latest.values("status")[:1]))
            .order_by("-updated_at")[:200])
    others = []
    if is_reviewer(request.user):
        others = (Conversation.objects.exclude(owner=request.user)
                  .annotate(pending=pending, status=Subquery(latest.values("status")[:1]))
                  .filter(pending__gt=0).select_related("owner").order_by("-updated_at")[:50])
    return render(request, "pages/list.html", {"conversations": mine, "others": others,
                                               "agents": registry.all_agents()})


@login_required
def new_chat(request: HttpRequest, agent: str | None = None) -> HttpResponse:
    agents = registry.all_agents()
    spec = registry.get(agent) if agent else None
    if agent and spec is None:
        raise Http404("no such agent")
    if spec is None:
        return render(request, "pages/new.html", {"agents": agents, "agent": None})
    schema = spec.input_schema()
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    message = ""
    if request.method == "POST":
        message = (request.POST.get("message") or "").strip()
        data, errors = _input_from_post(schema, request.POST)
        values = {k: request.POST.get(k, "") for k in (schema.get("properties") or {})}
        if not errors:
            try:
                run = run_start(owner=request.user, agent=spec.name, input=data,
                                message=message, surface="page")
            except InvalidInput as err:
                fields = (err.fields or {}).get("input") or {}
                errors = {k: v for k, v in fields.items()} or {"__all__": [err.detail]}
            except ServiceError as err:
                errors = {"__all__": [err.detail]}
            else:
                return redirect("pages:chat", conversation_id=run.conversation_id)
    elif request.method != "GET":
        return HttpResponse(status=405)
    return render(request, "pages/new.html", {
        "agents": agents, "agent": spec, "fields": input_fields(schema, values, errors),
        "errors": errors.get("__all__", []) + errors.get("input", []), "message": message,
    }, status=400 if errors else 200)


def _input_from_post(schema: dict[str, Any], post: Any) -> tuple[dict[str, Any], dict]:
    """The new-chat form's input, checked as the API's JSON parser checks a body (a JSON
    field's "\\u0000", NaN, deep nesting): (input, errors by field)."""
    try:
        data, errors = input_from_post(schema, post)
        if not errors:
            check_value(data)
    except RecursionError:  # a JSON field nested past what json can parse
        return {}, {"__all__": [f"JSON is nested deeper than {MAX_DEPTH} levels."]}
    except InvalidInput as err:
        # Shown beside the form's field the bad place is in ("steps[2].title" -> "steps").
        return {}, {re.split(r"[.\[]", k, maxsplit=1)[0]: [f"{k}: {m}" for m in v]
                    for k, v in (err.fields or {}).items()}
    return data, errors


@login_required
@require_GET
def chat(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation, is_owner = _conversation(request, conversation_id)
    return render(request, "pages/chat.html", _chat_context(request, conversation, is_owner))


@login_required
@require_GET
def run_fragment(request: HttpRequest, conversation_id: str, run_id: str) -> HttpResponse:
    """One run's block (messages, tools, cards, status); the page swaps it in when a run ends."""
    conversation, is_owner = _conversation(request, conversation_id)
    run = _run_of(conversation, run_id)
    block = run_blocks(conversation, [run], viewer=request.user)[0]
    return render(request, "pages/_run.html", {"block": block, "conversation": conversation})


@login_required
@require_GET
def composer_fragment(request: HttpRequest, conversation_id: str) -> HttpResponse:
    conversation, is_owner = _conversation(request, conversation_id)
    latest = not_waiting(AgentRun.objects.filter(conversation=conversation)).order_by(
        "-created_at").first()
    waiting = list(card_interrupts().filter(run=latest, status=PENDING)) if latest else []
    answerable = sum(1 for i in waiting if policies.may_decide(request.user, i))
    return render(request, "pages/_composer.html",
                  {"composer": _composer(conversation, is_owner, latest, len(waiting),
                                         answerable=answerable),
                   "conversation": conversation})


def _run_of(conversation: Conversation, run_id: str) -> AgentRun:
    try:
        return AgentRun.objects.get(pk=uuid.UUID(str(run_id)), conversation=conversation)
    except (ValueError, AgentRun.DoesNotExist):
        raise Http404("no such run") from None


@login_required
@require_POST
def answer(request: HttpRequest, conversation_id: str, interrupt_id: str) -> HttpResponse:
    """Answer one card. With htmx: the card, re-rendered. Without: redirect back (or the
    page with the card's errors)."""
    conversation, _ = _conversation(request, conversation_id)
    interrupt = card_interrupts().filter(run__conversation=conversation,
                                     interrupt_id=interrupt_id).first()
    if interrupt is None:
        raise Http404("no such question")
    outcome = card_answer(actor=request.user, interrupt=interrupt, data=request.POST,
                          surface="page")
    errors, status, keep = outcome.errors, outcome.status, outcome.keep_values
    if outcome.recorded:
        if _is_htmx(request):
            interrupt = card_interrupts().get(pk=interrupt.pk)
            return render(request, "hitl/cards/card.html",
                          {"card": interrupt_card(conversation, interrupt, viewer=request.user)})
        return redirect(reverse("pages:chat", args=[conversation.pk])
                        + f"#card-{interrupt.interrupt_id}")
    interrupt = card_interrupts().get(pk=interrupt.pk)
    values = request.POST if keep else None
    if _is_htmx(request):
        # 200 so htmx swaps the card in; the card itself carries the errors.
        return render(request, "hitl/cards/card.html", {"card": interrupt_card(
            conversation, interrupt, viewer=request.user, errors=errors, values=values)})
    _, is_owner = _conversation(request, conversation_id)
    context = _chat_context(request, conversation, is_owner,
                            card_errors={interrupt.interrupt_id: (errors, values)})
    return render(request, "pages/chat.html", context, status=status)


@login_required
@require_POST
def send(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """The composer: the next run on the same thread (the owner only)."""
    conversation, is_owner = _conversation(request, conversation_id)
    if not is_owner:
        raise Http404("no such conversation")
    text = (request.POST.get("message") or "").strip()
    error = ""
    if not text:
        error = "Write a message first."
    else:
        latest = (AgentRun.objects.filter(conversation=conversation)
                  .order_by("-created_at").first())
        try:
            run_start(owner=request.user, agent=conversation.agent,
                      input=latest.input if latest else None, message=text,
                      thread_id=conversation.thread_id, surface="page")
        except ServiceError as err:
            error = err.detail
        else:
            return redirect("pages:chat", conversation_id=conversation.pk)
    return render(request, "pages/chat.html", _chat_context(
        request, conversation, is_owner, composer_error=error, composer_text=text), status=400)


@login_required
@require_POST
def cancel(request: HttpRequest, conversation_id: str) -> HttpResponse:
    """Cancel the conversation's active run: its owner, or a reviewer (as on every surface)."""
    conversation, _ = _conversation(request, conversation_id)
    run = (AgentRun.objects.filter(conversation=conversation, status__in=AgentRun.ACTIVE)
           .order_by("-created_at").first())
    if run is not None:
        try:
            run_cancel(actor=request.user, run_id=run.id, surface="page")
        except Conflict:
            pass  # finished meanwhile: the page shows how it ended
    return redirect("pages:chat", conversation_id=conversation.pk)


# Conflicts of run_retry as a person reads them (the service's own text for the rest).
RETRY_REFUSED = {
    "run_not_failed": "This run can only be retried after it has failed; it is {status} now "
                      "(someone may have retried it already).",
    "thread_moved_on": "A later run has started in this conversation, so this one can no "
                       "longer be retried.",
}


@login_required
@require_POST
def retry(request: HttpRequest, conversation_id: str, run_id: str) -> HttpResponse:
    """Retry a failed run from its last checkpoint: its owner, or a reviewer (as cancel)."""
    conversation, is_owner = _conversation(request, conversation_id)
    run = _run_of(conversation, run_id)
    try:
        run_retry(actor=request.user, run_id=run.id, surface="page")
    except ServiceError as err:
        run.refresh_from_db(fields=["status"])
        error = RETRY_REFUSED.get(err.code, err.detail).format(
            status=run.get_status_display().lower())
        return render(request, "pages/chat.html", _chat_context(
            request, conversation, is_owner, composer_error=error), status=err.status)
    return redirect("pages:chat", conversation_id=conversation.pk)
