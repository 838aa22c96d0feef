"""The approval queue's changelist filters: status (pending by default), kind, agent,
deadline and assignment. Their choices come from fixed lists (formats, agent registry),
never from a DISTINCT over the table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib import admin
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from hitl.formats import FORMATS
from hitl.models import AgentInterrupt
from runs import registry

PENDING = AgentInterrupt.Status.PENDING


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
