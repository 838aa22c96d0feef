""""Answer differently" on the admin run page: the same fork form as the chat page's
(``pages.fork``), in the admin's frame. GET shows it (with the tool calls the original
ran after the answer), POST forks and opens the new run's page."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from execution.fork import Forked
from hitl.models import AgentInterrupt
from pages.fork import fork_form, fork_submit


def fork_view(model_admin: Any, request: HttpRequest, object_id: str,
              interrupt_pk: str) -> HttpResponse:
    run = model_admin.get_object(request, unquote(object_id))
    try:
        pk = uuid.UUID(str(interrupt_pk))
    except ValueError:
        raise Http404("no such question") from None
    interrupt = (AgentInterrupt.objects.select_related("run", "decided_by")
                 .filter(pk=pk, run=run).first()) if run is not None else None
    if interrupt is None:
        raise Http404("no such question")
    url = reverse("admin:runs_agentrun_fork", args=[run.pk, interrupt.pk])
    if request.method == "POST":
        done = fork_submit(actor=request.user, interrupt=interrupt, data=request.POST,
                           surface="admin", action_url=url)
        if isinstance(done, Forked):
            model_admin.message_user(request, "Forked: this new run goes on from that "
                                     "question with your answer.", messages.SUCCESS)
            return HttpResponseRedirect(reverse("admin:runs_agentrun_change",
                                                args=[done.run.pk]))
        form = done
    else:
        form = fork_form(actor=request.user, interrupt=interrupt, action_url=url)
    context = {**model_admin.admin_site.each_context(request), **form.context(),
               "title": "Answer differently", "opts": model_admin.opts, "run": run,
               "back_url": reverse("admin:runs_agentrun_change", args=[run.pk])}
    return TemplateResponse(request, "admin/runs/agentrun/fork.html", context,
                            status=form.status)
