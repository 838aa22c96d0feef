"""The approval queue's decide page: one interrupt's card, the conversation that led to
it and what an answer edited; on an answer, "decide and next" to the following pending
interrupt of the queue as the reviewer filtered it."""

from __future__ import annotations

import copy
import json
import logging
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode

from agentsite.form_guard import check_items
from hitl.admin.actions import SURFACE
from hitl.card_answer import card_answer
from hitl.cards import article, card_context
from hitl.models import AgentInterrupt
from hitl.policies import may_decide
from hitl.selectors import can_decide
from runs.models import Message

log = logging.getLogger(__name__)

PENDING = AgentInterrupt.Status.PENDING
# Query parameter on a decide page: where to go after deciding ("next" or "queue").
AFTER = "_after"


def _with_param(request: HttpRequest, key: str, value: str) -> str:
    params = request.GET.copy()
    params[key] = value
    return f"{request.path}?{params.urlencode()}"


def _chat_url(obj: AgentInterrupt) -> str | None:
    # The chat pages are another surface; link to them when they are installed.
    try:
        return reverse("pages:chat", args=[obj.run.conversation_id])
    except NoReverseMatch:
        return None


def _edit_pairs(obj: AgentInterrupt) -> list[dict[str, str]]:
    """What an answer edited, each beside the original, as JSON (the format's ``edits``)."""
    if obj.decision is None:
        return []
    return [{"original_title": edit.original_title, "edited_title": edit.edited_title,
             "original": _pretty(edit.original), "edited": _pretty(edit.edited)}
            for edit in obj.format.edits(obj.decision)]


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


class DecidePage:
    """The change view as a decide page, mixed into the queue's ModelAdmin."""

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            return self._missing_redirect(request, object_id)
        errors: dict[str, list[str]] | None = None
        values: Any = None
        if request.method == "POST":
            outcome = self._decide(request, obj)
            if isinstance(outcome, HttpResponse):
                return outcome
            errors, values = outcome
            obj = self.get_object(request, unquote(object_id)) or obj
        may = (obj.status == PENDING and can_decide(request.user, obj.run)
               and may_decide(request.user, obj))
        after = request.GET.get(AFTER, "next")
        card = card_context(obj, action_url=request.get_full_path(), errors=errors,
                            values=values, can_answer=may, viewer=request.user)
        context = {
            **self.admin_site.each_context(request),
            "title": (f"Answer {article(card['kind_label'].lower())}" if may
                      else card["kind_label"]),
            "subtitle": f"{card['kind_label']} · {obj.run.agent} · asked by "
                        f"{obj.run.owner.get_username()}",
            "opts": self.opts,
            "original": obj,
            "card": card,
            "can_answer": may,
            "after": after,
            "after_next_url": _with_param(request, AFTER, "next"),
            "after_queue_url": _with_param(request, AFTER, "queue"),
            "preserved_filters": self.get_preserved_filters(request),
            "changelist_url": self._changelist_url(request),
            "run_url": reverse("admin:runs_agentrun_change", args=[obj.run_id]),
            "chat_url": _chat_url(obj),
            "conversation": list(Message.objects.filter(conversation_id=obj.run.conversation_id)
                                 .exclude(content="").order_by("created_at", "id")[:100]),
            "edit_pairs": _edit_pairs(obj),
            "interrupt_api_url": reverse("interrupt-detail", args=[obj.pk]),
            "queue_events_url": reverse("queue-events"),
        }
        return TemplateResponse(request, "admin/hitl/agentinterrupt/decide.html", context)

    def _decide(self, request: HttpRequest,
                obj: AgentInterrupt) -> HttpResponse | tuple[dict[str, list[str]], Any]:
        outcome = card_answer(actor=request.user, interrupt=obj, data=request.POST,
                              surface=SURFACE)
        if not outcome.recorded:
            # Shown once, on the card (focused, tied to its field): no second message.
            return outcome.errors, request.POST if outcome.keep_values else None
        question = obj.message or obj.kind
        if outcome.run_cancelled:
            self.message_user(request, f"Cancelled “{question}”, and with it the run.",
                              messages.SUCCESS)
        elif request.POST.get("_status") == "cancelled":
            self.message_user(request, f"Cancelled: {question}", messages.SUCCESS)
        else:
            self.message_user(request, f"Answered: {question}", messages.SUCCESS)
        return HttpResponseRedirect(self._after_decision(request, obj))

    def _after_decision(self, request: HttpRequest, obj: AgentInterrupt) -> str:
        """Where to go once the answer is committed: the next pending interrupt of the queue
        as the reviewer filtered it ("decide and next"), else that queue.

        Nothing here may turn the response into an error: the answer is recorded, and a
        500 would say otherwise (a reviewer would answer again, or think it lost). A filter
        the queue refuses (an unknown field or value, a NUL) falls back to the whole queue.
        """
        want_next = request.GET.get(AFTER, "next") == "next"
        if not want_next and not request.GET.get("_changelist_filters"):
            return self._changelist_url(request)
        try:
            # Also when going back to the queue: it checks the filter the queue link keeps.
            following = self._next_pending(request, after=obj)
        except Exception:  # noqa: BLE001 - whatever the filter does, the answer stands
            log.warning("decide page: the queue filter %r was refused; back to the whole "
                        "queue", request.GET.get("_changelist_filters", ""), exc_info=True)
            self.message_user(request, "The queue's filter was not valid: showing the whole "
                              "queue.", messages.WARNING)
            return reverse("admin:hitl_agentinterrupt_changelist")
        if following is not None and want_next:
            url = reverse("admin:hitl_agentinterrupt_change", args=[following.pk])
            return url + "?" + urlencode(
                {k: v for k, v in request.GET.items() if k in (AFTER, "_changelist_filters")})
        return self._changelist_url(request)

    def _next_pending(self, request: HttpRequest, *, after: AgentInterrupt) -> Any:
        """The oldest pending interrupt of the queue as the reviewer had filtered it; raises
        when the filter is not one the queue takes (so the queue link is not given either)."""
        filters = QueryDict(request.GET.get("_changelist_filters", ""))
        check_items(filters.lists(), settings.FORM_FIELD_MAX_BYTES,
                    where="_changelist_filters.")
        listing = copy.copy(request)
        listing.GET = filters
        listing.method = "GET"
        queue = self.get_changelist_instance(listing).get_queryset(listing)
        return queue.filter(status=PENDING).exclude(pk=after.pk).first()

    def _missing_redirect(self, request: HttpRequest, object_id: str) -> HttpResponse:
        # As the admin answers a missing (or hidden) object: a warning, then the queue.
        self.message_user(request, f"{self.opts.verbose_name.capitalize()} with ID "
                          f"“{unquote(object_id)}” doesn’t exist. Perhaps it was deleted?",
                          messages.WARNING)
        return HttpResponseRedirect(self._changelist_url(request))

    def _changelist_url(self, request: HttpRequest) -> str:
        url = reverse("admin:hitl_agentinterrupt_changelist")
        filters = request.GET.get("_changelist_filters")
        return f"{url}?{filters}" if filters else url
