"""The approval queue's ModelAdmin: the AgentInterrupt changelist's columns, search and
permissions, composed with its bulk actions (``hitl.admin.actions``) and decide page
(``hitl.admin.decide``). Who sees what comes from ``hitl.selectors``: a reviewer
(``hitl.decide_interrupt``) sees every run's interrupts, other staff their own runs'.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from agentsite.admin_base import ReadOnlyAdmin
from hitl.admin.actions import BulkActions
from hitl.admin.decide import DecidePage
from hitl.admin.filters import (
    AgentFilter,
    AssignmentFilter,
    KindFilter,
    OverdueFilter,
    StatusFilter,
)
from hitl.admin.presence import presence_cell
from hitl.models import AgentInterrupt
from hitl.policies import assigned_names, tally
from hitl.presence import NotLookedAtFilter
from hitl.selectors import decidable_interrupts
from pages.markdown import render_inline

PENDING = AgentInterrupt.Status.PENDING


# --- the admin --------------------------------------------------------------------

@admin.register(AgentInterrupt)
class AgentInterruptAdmin(BulkActions, DecidePage, ReadOnlyAdmin):
    list_display = ["age", "kind", "question", "agent", "requester", "assigned_to", "approvals",
                    "time_left", "status"]
    list_display_links = ["question"]
    list_filter = [StatusFilter, KindFilter, AgentFilter, OverdueFilter, AssignmentFilter,
                   NotLookedAtFilter]
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
            # `code` and **bold** as the card's title shows them; who is on it below.
            return format_html("{}{}", render_inline(text), presence_cell(obj))
        # Cut on a word boundary: the column is wide enough for two or three lines (a
        # word longer than that wraps: admin_queue.css). The whole question is its title.
        return format_html('<span title="{}">{}</span>{}', text[:2000],
                           render_inline(text[:200].rsplit(" ", 1)[0] + " …"),
                           presence_cell(obj))

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
        extra = {"queue_events_url": reverse("queue-events"), **(extra_context or {})}
        response = super().changelist_view(request, extra)
        cl = (getattr(response, "context_data", None) or {}).get("cl")
        if cl is not None and not cl.query and set(cl.params) <= {"status", "o"} \
                and cl.params.get("status", PENDING) == PENDING:
            # The unfiltered queue counted exactly what the header counts: reuse it.
            request.hitl_pending_count = cl.result_count
        return response


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
