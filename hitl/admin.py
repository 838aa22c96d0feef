"""The approval queue: the AgentInterrupt changelist and its decide pages.

Every answer goes through ``execution.lifecycle.interrupts_answer(..., surface="admin")``
(the decide page's card through ``hitl.card_answer``), which locks, checks permission and
status, validates and audits; this module only turns
forms into calls and errors into messages. Who sees what comes from ``hitl.selectors``:
a reviewer (``hitl.decide_interrupt``) sees every run's interrupts, other staff their own.
"""

from __future__ import annotations

import copy
import json
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import unquote
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.http import urlencode

from agentsite.admin_base import ReadOnlyAdmin
from agentsite.errors import Conflict, Forbidden, Gone, InvalidInput, NotFound, ServiceError
from agentsite.form_guard import check_items
from execution.lifecycle import interrupts_answer
from hitl.assign import interrupt_assign
from hitl.card_answer import card_answer
from hitl.cards import article, card_context
from hitl.decide import Answer
from hitl.formats import FORMATS, for_interrupt
from hitl.models import AgentInterrupt
from hitl.policies import assigned_names, may_decide, tally
from hitl.selectors import can_decide, decidable_interrupts
from pages.markdown import render_inline
from runs import registry
from runs.models import Message

log = logging.getLogger(__name__)

PENDING = AgentInterrupt.Status.PENDING
SURFACE = "admin"
# Query parameter on a decide page: where to go after deciding ("next" or "queue").
AFTER = "_after"


# --- filters --------------------------------------------------------------------

class StatusFilter(admin.SimpleListFilter):
    """Status, defaulting to pending: the queue opens on what waits for an answer."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*[(s.value, s.label) for s in AgentInterrupt.Status], ("all", "All")]

    def value(self) -> str:
        return super().value() or PENDING

    def choices(self, changelist: Any) -> Iterator[dict[str, Any]]:
        # No "All" entry of Django's own: its link would drop the parameter, i.e. pending.
        for value, label in self.lookup_choices:
            yield {"selected": self.value() == value, "display": label,
                   "query_string": changelist.get_query_string({self.parameter_name: value})}

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        return queryset if value == "all" else queryset.filter(status=value)


class KindFilter(admin.SimpleListFilter):
    # The formats are fixed: listing them needs no SELECT DISTINCT over the whole table.
    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(f.name, f.name) for f in FORMATS]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(kind=self.value()) if self.value() else queryset


class AgentFilter(admin.SimpleListFilter):
    # Choices from the registry, not from a DISTINCT over the runs.
    title = "agent"
    parameter_name = "agent"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(a.name, a.name) for a in registry.all_agents()]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        return queryset.filter(run__agent=self.value()) if self.value() else queryset


class OverdueFilter(admin.SimpleListFilter):
    title = "deadline"
    parameter_name = "overdue"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Overdue"), ("no", "Not overdue")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        overdue = Q(expires_at__lte=timezone.now())
        if self.value() == "yes":
            return queryset.filter(overdue)
        if self.value() == "no":
            return queryset.exclude(overdue)
        return queryset


class AssignmentFilter(admin.SimpleListFilter):
    """Who the interrupt is assigned to (hitl policies)."""

    title = "assignment"
    parameter_name = "assigned"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("me", "Assigned to me"), ("groups", "My groups"), ("none", "Unassigned")]

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        user = request.user
        if self.value() == "me":
            return queryset.filter(assignees=user)
        if self.value() == "groups":
            # A subquery, not DISTINCT (``request`` is a json column: no equality operator).
            return queryset.filter(pk__in=AgentInterrupt.objects.filter(
                assigned_groups__in=user.groups.all()).values("pk"))
        if self.value() == "none":
            return queryset.filter(assignees__isnull=True, assigned_groups__isnull=True)
        return queryset


# --- bulk answers -----------------------------------------------------------------

def approve_payload(row: AgentInterrupt) -> Any | None:
    """The format's plain "approve" answer (None: its format has none, or this one cannot
    be approved, e.g. a review or a tool call whose config leaves "approve" out)."""
    fmt = for_interrupt(row)
    return fmt.approve_answer() if fmt.bulk_approve else None


def reject_payload(row: AgentInterrupt, reason: str) -> Any | None:
    """The format's plain "reject" answer with ``reason`` (None: it has none)."""
    return for_interrupt(row).reject_answer(reason)


def skip_reason(err: ServiceError) -> str:
    """Why the decision service refused one row of a bulk action, in the reviewer's words."""
    if isinstance(err, NotFound):
        return "not permitted"
    if isinstance(err, Gone):
        return "expired"
    if isinstance(err, Forbidden):
        return {"not_assigned": "assigned to someone else",
                "requester_may_not_decide": "needs a reviewer other than the requester"
                }.get(err.code, err.code)
    if isinstance(err, InvalidInput):
        return "not approvable"
    if isinstance(err, Conflict) and err.code in ("already_decided", "not_pending"):
        return "already decided"
    if isinstance(err, Conflict) and err.code == "run_not_paused":
        return "run no longer paused"
    if isinstance(err, Conflict) and err.code == "version_mismatch":
        return "agent version changed"
    return err.code


def _format(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


# --- the admin --------------------------------------------------------------------

@admin.register(AgentInterrupt)
class AgentInterruptAdmin(ReadOnlyAdmin):
    list_display = ["age", "kind", "question", "agent", "requester", "assigned_to", "approvals",
                    "time_left", "status"]
    list_display_links = ["question"]
    list_filter = [StatusFilter, KindFilter, AgentFilter, OverdueFilter, AssignmentFilter]
    list_select_related = ["run", "run__owner"]
    # Django's full count would be a second COUNT over every row the user may see.
    show_full_result_count = False
    # Facet counts would be one COUNT per filter choice over the whole queue.
    show_facets = admin.ShowFacets.NEVER
    list_per_page = 50
    ordering = ["created_at", "id"]
    # What the search covers; get_search_results() below runs it (a whole UUID is an
    # indexed lookup, anything else matches question text and requester).
    search_fields = ["request", "run__id", "run__owner__username"]
    search_help_text = "Question text, run id (whole) or requester's username."
    actions = ["approve_selected", "reject_selected", "claim_selected", "release_selected",
               "assign_selected"]
    change_list_template = "admin/hitl/agentinterrupt/change_list.html"

    # Staff see the queue: reviewers everyone's interrupts, other staff their own runs'.
    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_decide_permission(self, request: HttpRequest) -> bool:
        # Per-row permission is the decision service's (can_decide); this only shows the actions.
        return request.user.is_active and request.user.is_staff

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (decidable_interrupts(request.user).select_related("run", "run__owner")
                .prefetch_related("assignees", "assigned_groups", "votes"))

    def get_search_results(self, request: HttpRequest, queryset: QuerySet,
                           search_term: str) -> tuple[QuerySet, bool]:
        term = search_term.strip()
        if not term:
            return queryset, False
        try:
            # A whole UUID is a run id (or an interrupt's own id): an index lookup.
            value = uuid.UUID(term)
        except ValueError:
            # The requester through a subquery on the (small) user table, not a join.
            owners = get_user_model().objects.filter(username__icontains=term).values("pk")
            match = Q(request__message__icontains=term) | Q(run__owner__in=owners)
            return queryset.filter(match), False
        return queryset.filter(Q(run_id=value) | Q(pk=value)), False

    # --- columns ---

    @admin.display(description="age", ordering="created_at")
    def age(self, obj: AgentInterrupt) -> str:
        text = _duration(timezone.now() - obj.created_at)
        if obj.status == PENDING and obj.expires_at and obj.expires_at <= timezone.now():
            return format_html('<span class="queue-overdue" title="past its deadline">{}</span>',
                               text)
        return text

    @admin.display(description="question")
    def question(self, obj: AgentInterrupt) -> str:
        text = obj.message or f"({obj.kind})"
        if len(text) <= 200:
            return render_inline(text)  # `code` and **bold** as the card's title shows them
        # Cut on a word boundary: the column is wide enough for two or three lines (a
        # word longer than that wraps: admin_queue.css). The whole question is its title.
        return format_html('<span title="{}">{}</span>', text[:2000],
                           render_inline(text[:200].rsplit(" ", 1)[0] + " …"))

    @admin.display(description="agent", ordering="run__agent")
    def agent(self, obj: AgentInterrupt) -> str:
        return obj.run.agent

    @admin.display(description="requester", ordering="run__owner__username")
    def requester(self, obj: AgentInterrupt) -> str:
        return obj.run.owner.get_username()

    # Not named "assignees": the model field of that name would be shown instead.
    @admin.display(description="assignees")
    def assigned_to(self, obj: AgentInterrupt) -> str:
        users, groups = assigned_names(obj)
        return ", ".join(users + [f"group {g}" for g in groups]) or "—"

    @admin.display(description="approvals")
    def approvals(self, obj: AgentInterrupt) -> str:
        if obj.required_approvals <= 1:
            return "—"
        return tally(obj.required_approvals, sum(1 for v in obj.votes.all() if v.approved))

    @admin.display(description="time left", ordering="expires_at")
    def time_left(self, obj: AgentInterrupt) -> str:
        if obj.expires_at is None or obj.status != PENDING:
            return "—"
        left = obj.expires_at - timezone.now()
        if left <= timedelta(0):
            return format_html('<span class="queue-overdue">overdue by {}</span>',
                               _duration(-left))
        return _duration(left)

    # --- the changelist ---

    def changelist_view(self, request: HttpRequest,
                        extra_context: dict | None = None) -> HttpResponse:
        extra = {"queue_events_url": "/api/events/", **(extra_context or {})}
        response = super().changelist_view(request, extra)
        cl = (getattr(response, "context_data", None) or {}).get("cl")
        if cl is not None and not cl.query and set(cl.params) <= {"status", "o"} \
                and cl.params.get("status", PENDING) == PENDING:
            # The unfiltered queue counted exactly what the header counts: reuse it.
            request.hitl_pending_count = cl.result_count
        return response

    # --- bulk actions ---

    @admin.action(description="Approve selected", permissions=["decide"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._bulk(request, queryset, approve_payload, "approved")

    @admin.action(description="Reject selected…", permissions=["decide"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        reason = request.POST.get("reason", "").strip()
        if request.POST.get("post") == "yes" and reason:
            self._bulk(request, queryset, lambda row: reject_payload(row, reason), "rejected")
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Reject the selected interrupts",
            "opts": self.opts,
            "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
            "select_across": request.POST.get("select_across", "0"),
            "rows": self._selected_visible(request, queryset)[:200],
            "reason": reason,
            "error": "Give a reason." if request.POST.get("post") == "yes" else "",
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/hitl/agentinterrupt/reject_selected.html",
                                context)

    # --- assignment (hitl.assign.interrupt_assign; a reviewer only) ---

    @admin.action(description="Claim selected (assign to me)", permissions=["decide"])
    def claim_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._assign(request, queryset, "claim")

    @admin.action(description="Release selected (unassign me)", permissions=["decide"])
    def release_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._assign(request, queryset, "release")

    @admin.action(description="Assign selected…", permissions=["decide"])
    def assign_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        users = [n.strip() for n in request.POST.get("users", "").split(",") if n.strip()]
        groups = [n.strip() for n in request.POST.get("groups", "").split(",") if n.strip()]
        error = ""
        if request.POST.get("post") == "yes":
            if users or groups:
                error = self._assign(request, queryset, "assign", users=users, groups=groups)
                if not error:
                    return None
            else:
                error = "Name at least one user or group."
        context = {
            **self.admin_site.each_context(request),
            "title": "Assign the selected interrupts",
            "opts": self.opts,
            "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
            "select_across": request.POST.get("select_across", "0"),
            "rows": self._selected_visible(request, queryset)[:200],
            "users": request.POST.get("users", ""),
            "groups": request.POST.get("groups", ""),
            "error": error,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/hitl/agentinterrupt/assign_selected.html",
                                context)

    def _assign(self, request: HttpRequest, queryset: QuerySet, action: str,
                **names: list[str]) -> str:
        """Apply one assignment action to each selected row; an error to show, or ""."""
        done = 0
        skipped: Counter[str] = Counter()
        for row in self._selected_rows(request, queryset):
            try:
                interrupt_assign(actor=request.user, interrupt_pk=row.pk, action=action,
                                 surface=SURFACE, **names)
            except InvalidInput as err:
                return "; ".join(m for msgs in (err.fields or {}).values() for m in msgs) \
                    or err.detail
            except ServiceError as err:
                skipped[skip_reason(err)] += 1
            else:
                done += 1
        verb = {"claim": "claimed", "release": "released", "assign": "assigned"}[action]
        text = f"{_format(done, 'interrupt')} {verb}"
        if skipped:
            text += "; skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
        self.message_user(request, text + ".",
                          messages.SUCCESS if done and not skipped else messages.WARNING)
        return ""

    def _selected_rows(self, request: HttpRequest, queryset: QuerySet) -> list[AgentInterrupt]:
        # The rows the reviewer ticked, whatever their status now: one decided meanwhile is
        # reported as such rather than silently left out by the changelist's status filter.
        if request.POST.get("select_across") == "1":
            rows = queryset
        else:
            ids = request.POST.getlist(ACTION_CHECKBOX_NAME)
            rows = AgentInterrupt.objects.filter(pk__in=_uuids(ids))
        return list(rows.select_related("run", "run__owner").order_by("created_at", "id"))

    def _selected_visible(self, request: HttpRequest,
                          queryset: QuerySet) -> list[AgentInterrupt]:
        """The selected rows this user may see (what an intermediate page lists)."""
        rows = self._selected_rows(request, queryset)
        visible = set(decidable_interrupts(request.user).filter(pk__in=[r.pk for r in rows])
                      .values_list("pk", flat=True))
        return [row for row in rows if row.pk in visible]

    def _bulk(self, request: HttpRequest, queryset: QuerySet,
              payload_for: Callable[[AgentInterrupt], dict[str, Any] | None], verb: str) -> None:
        rows = self._selected_rows(request, queryset)
        visible = set(decidable_interrupts(request.user).filter(pk__in=[r.pk for r in rows])
                      .values_list("pk", flat=True))
        done = 0
        skipped: Counter[str] = Counter()
        for row in rows:
            payload = payload_for(row)
            if row.pk not in visible:
                skipped["not permitted"] += 1
            elif payload is None:
                skipped["not approvable"] += 1
            else:
                try:
                    # Each row is its own transaction inside the service: one refused row
                    # leaves the others decided, and none half done.
                    interrupts_answer(actor=request.user, run_id=row.run_id,
                                      surface=SURFACE, answers=[Answer(
                                          interrupt_id=row.interrupt_id, payload=payload)])
                except ServiceError as err:
                    skipped[skip_reason(err)] += 1
                else:
                    done += 1
        text = f"{_format(done, 'interrupt')} {verb}"
        if skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
            text += f"; {sum(skipped.values())} skipped ({reasons})"
        level = messages.SUCCESS if done and not skipped else messages.WARNING
        self.message_user(request, text + ".", level)

    # --- the decide page ---

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
            "interrupt_api_url": f"/api/interrupts/{obj.pk}/",
            "queue_events_url": "/api/events/",
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


# --- helpers ------------------------------------------------------------------------

def _duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h {seconds % 3600 // 60}m"
    return f"{seconds // 86400}d {seconds % 86400 // 3600}h"


def _uuids(values: list[str]) -> list[uuid.UUID]:
    out = []
    for value in values:
        try:
            out.append(uuid.UUID(value))
        except ValueError:
            continue  # a tampered checkbox value selects nothing
    return out


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
    """What an answer edited, each beside the original, as JSON: a review's proposal, or
    each tool call that ran with edited arguments (the format's ``call_decisions``)."""
    def pretty(value: Any) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False)

    # A review answered "edit" (the only answer of ours that carries an edited copy).
    decision = obj.decision if isinstance(obj.decision, dict) else {}
    request = obj.request if isinstance(obj.request, dict) else {}
    if decision.get("decision") == "edit" and "proposal" in request:
        return [{"original_title": "Original proposal", "edited_title": "Edited version",
                 "original": pretty(request.get("proposal")),
                 "edited": pretty(decision.get("edited"))}]
    if obj.decision is None:
        return []
    return [{"original_title": f"{call.name}: the arguments the agent asked for",
             "edited_title": f"{call.name}: the arguments it ran with",
             "original": pretty(call.args), "edited": pretty(call.ran_args)}
            for call in obj.format.call_decisions(obj.decision)
            if call.decision == "edit" and call.ran_args is not None]


# The policy models' admin (standing approvals, webhooks, delivery log) lives beside this.
from hitl import policy_admin  # noqa: E402,F401
