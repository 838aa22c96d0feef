""""Answer differently" as a form: the chat page's fork page (and the admin's, which
reuses ``fork_form`` / ``fork_submit``), server-rendered, working without JavaScript.

GET shows the question as a fresh card, what the original answered, and the tool calls
the original run executed after it (a fork does not undo them): the page is the
confirmation step. POST forks (``execution.fork``) and goes to the new conversation; a
refused answer re-renders the form with its errors (400), a refused fork says why with
its status (403, 409, 410).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from agentsite.errors import InvalidInput, NotFound, ServiceError
from agentsite.limits import check_answer_size
from agentsite.parsers import check_value
from execution.fork import Forked, ForkPoint, fork_point, interrupt_fork
from hitl.cards import CardFormError, answer_from_post, card_context
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide
from runs.models import Conversation


@dataclass
class ForkForm:
    """What the fork page shows: the card to fill in, or why the fork is refused."""

    interrupt: AgentInterrupt
    point: ForkPoint | None = None
    card: dict[str, Any] = field(default_factory=dict)
    refused: str = ""
    status: int = 200

    def context(self) -> dict[str, Any]:
        original = self.interrupt
        return {"fork": self, "card": self.card, "original": original,
                "original_summary": original.format.summary(original.decision)
                if original.decision is not None else "",
                "tool_calls": self.point.tool_calls if self.point else []}


def _fresh(original: AgentInterrupt) -> AgentInterrupt:
    """An unsaved pending copy of the question, for its card's form (the policy is the
    service's to check, so the form is not hidden)."""
    copy = AgentInterrupt(run=original.run, interrupt_id=original.interrupt_id,
                          kind=original.kind, request=original.request,
                          response_schema=original.response_schema,
                          args_schemas=original.args_schemas,
                          status=AgentInterrupt.Status.PENDING)
    copy.assignee_ids, copy.group_ids = [], []
    return copy


def fork_form(*, actor: Any, interrupt: AgentInterrupt, action_url: str,
              errors: dict | None = None, values: Any = None) -> ForkForm:
    """The fork page of ``interrupt`` for ``actor``: its card, or why not (Http404 for a
    question ``actor`` may not see)."""
    form = ForkForm(interrupt=interrupt)
    try:
        form.point = fork_point(actor=actor, interrupt_pk=interrupt.pk)
    except NotFound:
        raise Http404("no such question") from None
    except ServiceError as err:
        form.refused, form.status = err.detail, err.status
        return form
    form.card = card_context(_fresh(interrupt), action_url=action_url, errors=errors,
                             values=values, preview=True)
    if errors:
        form.status = 400
    return form


def fork_submit(*, actor: Any, interrupt: AgentInterrupt, data: Any, surface: str,
                action_url: str) -> Forked | ForkForm:
    """Fork from the posted card: the new run, or the form again with what was refused."""
    fresh = _fresh(interrupt)
    try:
        if data.get("_status") == "cancelled":
            raise InvalidInput("a fork needs an answer", fields={"__all__": [
                "A fork needs an answer: cancelling is not one."]})
        _status, payload = answer_from_post(fresh, data)
        check_value(payload)
        check_answer_size(payload)
        return interrupt_fork(actor=actor, interrupt_pk=interrupt.pk, payload=payload,
                              surface=surface)
    except CardFormError as err:
        return fork_form(actor=actor, interrupt=interrupt, action_url=action_url,
                         errors=err.fields, values=data)
    except InvalidInput as err:
        return fork_form(actor=actor, interrupt=interrupt, action_url=action_url,
                         errors=err.fields or {"__all__": [err.detail]}, values=data)
    except NotFound:
        raise Http404("no such question") from None
    except ServiceError as err:
        form = ForkForm(interrupt=interrupt, refused=err.detail, status=err.status)
        return form


def _question(request: HttpRequest, conversation_id: str,
              interrupt_id: str) -> tuple[Conversation, AgentInterrupt]:
    try:
        pk = uuid.UUID(str(conversation_id))
    except ValueError:
        raise Http404("no such conversation") from None
    conversation = Conversation.objects.filter(pk=pk).first()
    if conversation is None or not can_decide(request.user, conversation):
        raise Http404("no such conversation")
    interrupt = (AgentInterrupt.objects.select_related("run", "decided_by")
                 .filter(run__conversation=conversation, interrupt_id=interrupt_id).first())
    if interrupt is None:
        raise Http404("no such question")
    return conversation, interrupt


@login_required
@require_http_methods(["GET", "POST"])
def fork(request: HttpRequest, conversation_id: str, interrupt_id: str) -> HttpResponse:
    conversation, interrupt = _question(request, conversation_id, interrupt_id)
    url = reverse("pages:fork", args=[conversation.pk, interrupt.interrupt_id])
    if request.method == "POST":
        done = fork_submit(actor=request.user, interrupt=interrupt, data=request.POST,
                           surface="page", action_url=url)
        if isinstance(done, Forked):
            return redirect("pages:chat", done.run.conversation_id)
        form = done
    else:
        form = fork_form(actor=request.user, interrupt=interrupt, action_url=url)
    return render(request, "pages/fork.html",
                  {**form.context(), "conversation": conversation,
                   "back_url": reverse("pages:chat", args=[conversation.pk])
                   + f"#card-{interrupt.interrupt_id}"}, status=form.status)
