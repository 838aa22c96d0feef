"""Runs in the admin: read-only rows, a run's timeline, "cancel run" and "retry run" through
the services, and token usage (per run, per segment, and totals per user, agent and day)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from agentsite.admin_base import ReadOnlyAdmin
from agentsite.errors import ServiceError
from execution.lifecycle import run_cancel, run_retry
from hitl.models import AgentInterrupt
from hitl.selectors import can_decide, decidable_runs, is_reviewer
from pages.fork_admin import fork_view
from pages.retrying import retry_banner
from runs.models import AgentRun, AuditLog, Conversation, Message, SegmentUsage


class MessageInline(admin.TabularInline):
    model = Message
    fields = ["role", "content", "run", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "agent", "owner", "updated_at"]
    list_filter = ["agent"]
    search_fields = ["id", "title", "owner__username"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "conversation", "role", "run", "created_at"]
    list_filter = ["role"]


class AuditInline(admin.TabularInline):
    model = AuditLog
    fields = ["created_at", "actor_label", "surface", "action", "interrupt_ref", "from_status",
              "to_status", "payload"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Whoever may see the run sees its audit trail.
        return request.user.is_active and request.user.is_staff


class UsageInline(admin.TabularInline):
    model = SegmentUsage
    verbose_name, verbose_name_plural = "segment's token usage", "Token usage per segment"
    fields = ["segment", "model_name", "calls", "input_tokens", "output_tokens", "total_tokens",
              "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Whoever may see the run sees what it used.
        return request.user.is_active and request.user.is_staff


# The run page's sections: what went wrong and the retries, then the tokens used.
FAILURE_FIELDS = ["error", "error_detail", "retries", "retry_at", "retry_reason",
                  "manual_retries"]
USAGE_FIELDS = ["model_name", "input_tokens", "output_tokens", "total_tokens"]


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "agent", "agent_version", "owner", "status", "segments",
                    "total_tokens", "created_at"]
    list_filter = ["status", "agent"]
    search_fields = ["id", "thread_id", "owner__username"]
    # The checkpoint sweep's bookkeeping, not something a reviewer acts on.
    exclude = ["checkpoints_pruned"]
    list_select_related = ["owner"]
    inlines = [UsageInline, AuditInline]
    change_form_template = "admin/runs/agentrun/change_form.html"

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        grouped = set(FAILURE_FIELDS) | set(USAGE_FIELDS)
        rest = [f for f in self.get_fields(request, obj) if f not in grouped]
        return [(None, {"fields": rest}),
                ("Failure and retries", {"fields": FAILURE_FIELDS}),
                ("Token usage (all segments)", {"fields": USAGE_FIELDS})]

    # Staff with the model's view permission see every run; other staff (e.g. a requester
    # following a link from the queue) see the runs whose interrupts they may decide.
    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_active and request.user.is_staff

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        if request.user.has_perm("runs.view_agentrun"):
            return super().get_queryset(request)
        return decidable_runs(request.user).select_related("owner")

    def get_urls(self) -> list[Any]:
        cancel = self.admin_site.admin_view(self.cancel_view)
        retry = self.admin_site.admin_view(self.retry_view)
        fork = self.admin_site.admin_view(self.fork_view)
        return [path("<path:object_id>/fork/<str:interrupt_pk>/", fork,
                     name="runs_agentrun_fork"),
                path("<path:object_id>/cancel/", cancel, name="runs_agentrun_cancel"),
                path("<path:object_id>/retry/", retry, name="runs_agentrun_retry"),
                *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if run is not None:
            extra["timeline"] = timeline(run)
            extra["cancel_url"] = (None if run.is_finished else
                                   reverse("admin:runs_agentrun_cancel", args=[run.pk]))
            # The service decides (a later run on the thread refuses it); offered to whoever
            # it would let retry: the owner or a reviewer.
            extra["retry_url"] = (reverse("admin:runs_agentrun_retry", args=[run.pk])
                                  if run.status == AgentRun.Status.FAILED
                                  and can_decide(request.user, run) else None)
            extra["retrying"] = retry_banner(run)
            extra["run"] = run
        return super().change_view(request, object_id, form_url, extra)

    def fork_view(self, request: HttpRequest, object_id: str,
                  interrupt_pk: str) -> HttpResponse:
        """GET: the "answer differently" form; POST: fork (``pages.fork_admin``)."""
        return fork_view(self, request, object_id, interrupt_pk)

    def retry_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST (CSRF-checked by admin_view): retry a failed run from its last checkpoint."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        run = self.get_object(request, unquote(object_id))
        if run is None:  # missing, or not this user's: as the admin answers, then the list
            self.message_user(request, f"Agent run with ID “{unquote(object_id)}” doesn’t "
                              "exist. Perhaps it was deleted?", messages.WARNING)
            return HttpResponseRedirect(reverse("admin:runs_agentrun_changelist"))
        try:
            run_retry(actor=request.user, run_id=run.pk, surface="admin")
        except ServiceError as err:
            self.message_user(request, f"Not retried: {err.detail}", messages.ERROR)
        else:
            self.message_user(request, "The run is retrying: it goes on from its last "
                              "checkpoint.", messages.SUCCESS)
        return HttpResponseRedirect(reverse("admin:runs_agentrun_change", args=[run.pk]))

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """GET: the confirmation page. POST (CSRF-checked by admin_view): cancel the run."""
        run = self.get_object(request, unquote(object_id))
        if run is None:  # missing, or not this user's: as the admin answers, then the list
            self.message_user(request, f"Agent run with ID “{unquote(object_id)}” doesn’t "
                              "exist. Perhaps it was deleted?", messages.WARNING)
            return HttpResponseRedirect(reverse("admin:runs_agentrun_changelist"))
        back = reverse("admin:runs_agentrun_change", args=[run.pk])
        if request.method == "POST":
            try:
                run_cancel(actor=request.user, run_id=run.pk, surface="admin")
            except ServiceError as err:
                self.message_user(request, f"Not cancelled: {err.detail}", messages.ERROR)
            else:
                self.message_user(request, "The run is cancelled.", messages.SUCCESS)
            return HttpResponseRedirect(back)
        context = {
            **self.admin_site.each_context(request),
            "title": "Cancel this run?",
            "opts": self.opts,
            "original": run,
            "back_url": back,
            "pending": run.interrupts.filter(status=AgentInterrupt.Status.PENDING).count(),
        }
        return TemplateResponse(request, "admin/runs/agentrun/cancel.html", context)


class UsageRange(forms.Form):
    """The totals page's date range (days in the server's time zone, both included)."""

    start = forms.DateField(required=False, label="From",
                            widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, label="To",
                          widget=forms.DateInput(attrs={"type": "date"}))

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("start") and data.get("end") and data["start"] > data["end"]:
            raise forms.ValidationError("“From” must not be after “To”.")
        return data


# Totals over this many days when the page is opened without a range.
USAGE_DEFAULT_DAYS = 30
TOKEN_SUMS = {"calls": Sum("calls"), "input": Sum("input_tokens"),
              "output": Sum("output_tokens"), "total": Sum("total_tokens"),
              "runs": Count("run", distinct=True)}


@admin.register(SegmentUsage)
class SegmentUsageAdmin(ReadOnlyAdmin):
    """Every segment's tokens, and the totals page (per user, agent, model and day).

    Reviewers only (superusers are reviewers): usage spans every user's runs."""

    list_display = ["run", "segment", "owner", "agent", "model_name", "calls", "input_tokens",
                    "output_tokens", "total_tokens", "created_at"]
    list_filter = ["created_at", "model_name"]
    search_fields = ["run__id", "run__owner__username", "run__agent"]
    list_select_related = ["run__owner"]
    date_hierarchy = "created_at"
    change_list_template = "admin/runs/segmentusage/change_list.html"

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_staff and is_reviewer(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    @admin.display(ordering="run__owner__username")
    def owner(self, obj: SegmentUsage) -> str:
        return obj.run.owner.get_username()

    @admin.display(ordering="run__agent")
    def agent(self, obj: SegmentUsage) -> str:
        return obj.run.agent

    def get_urls(self) -> list[Any]:
        totals = self.admin_site.admin_view(self.totals_view)
        return [path("totals/", totals, name="runs_segmentusage_totals"), *super().get_urls()]

    def totals_view(self, request: HttpRequest) -> HttpResponse:
        """Token totals per user, agent, model and day over a date range (GET ?start=&end=)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        today = timezone.localdate()
        form = UsageRange(request.GET or {"start": today - timedelta(days=USAGE_DEFAULT_DAYS - 1),
                                          "end": today})
        context = {**self.admin_site.each_context(request), "title": "Token usage",
                   "opts": self.opts, "form": form,
                   "tz": timezone.get_current_timezone_name()}
        if not form.is_valid():
            return TemplateResponse(request, "admin/runs/segmentusage/totals.html", context,
                                    status=400)
        rows = usage_in(form.cleaned_data.get("start"), form.cleaned_data.get("end"))
        context.update({
            "start": form.cleaned_data.get("start"), "end": form.cleaned_data.get("end"),
            "overall": rows.aggregate(**TOKEN_SUMS),
            "per_user": rows.values(name=F("run__owner__username"))
            .annotate(**TOKEN_SUMS).order_by("-total", "name"),
            "per_agent": rows.values(name=F("run__agent"))
            .annotate(**TOKEN_SUMS).order_by("-total", "name"),
            "per_model": rows.values(name=F("model_name"))
            .annotate(**TOKEN_SUMS).order_by("-total", "name"),
            "per_day": rows.annotate(day=TruncDate("created_at")).values("day")
            .annotate(**TOKEN_SUMS).order_by("-day"),
        })
        return TemplateResponse(request, "admin/runs/segmentusage/totals.html", context)


def usage_in(start: date | None, end: date | None) -> QuerySet[SegmentUsage]:
    """Segment usage rows recorded from ``start`` to ``end`` (days, both included)."""
    rows = SegmentUsage.objects.all()
    if start:
        rows = rows.filter(created_at__date__gte=start)
    if end:
        rows = rows.filter(created_at__date__lte=end)
    return rows


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ["id", "created_at", "actor_label", "surface", "action", "run",
                    "interrupt_ref", "from_status", "to_status"]
    list_filter = ["action", "surface"]
    search_fields = ["run__id", "interrupt_ref", "actor_label"]


def timeline(run: AgentRun) -> list[dict[str, Any]]:
    """The run's segments in order, one entry per attempt at each, with the interrupts it
    asked (and their answers) and the tokens it used.

    A segment starts when the run goes to ``running`` from ``queued`` or ``resuming``
    (audit rows are the record), as ``AgentRun.segments`` counts them; going to
    ``running`` from ``retrying`` is another attempt at the same segment. An interrupt or
    a usage row belongs to the attempt during which it was created (a failed attempt's
    usage is recorded just before the run goes ``retrying`` or ``failed``).
    """
    changes = list(run.audit_log.filter(action=AuditLog.Action.RUN_STATUS).order_by("id"))
    interrupts = list(run.interrupts.select_related("decided_by").order_by("created_at", "id"))
    attempts: list[dict[str, Any]] = []
    number = 0
    for change in changes:
        if change.to_status == AgentRun.Status.RUNNING:
            retried = change.from_status == AgentRun.Status.RETRYING and attempts
            number = number if retried else number + 1
            attempts.append({"number": number,
                             "attempt": attempts[-1]["attempt"] + 1 if retried else 1,
                             "started_at": change.created_at, "ended_at": None,
                             "ended_as": "", "interrupts": [], "usage": []})
        elif attempts and attempts[-1]["ended_at"] is None and change.from_status == "running":
            attempts[-1]["ended_at"] = change.created_at
            attempts[-1]["ended_as"] = change.to_status
    for item in interrupts:
        owner = _attempt_at(attempts, item.created_at)
        item.decision_json = json.dumps(item.decision, indent=1, ensure_ascii=False)
        owner["interrupts"].append(item)
    for usage in run.usage.all():
        if attempts:
            _attempt_at(attempts, usage.created_at)["usage"].append(usage)
    return attempts


def _attempt_at(attempts: list[dict[str, Any]], when: Any) -> dict[str, Any]:
    """The attempt that was running at ``when`` (the latest one started by then, else the
    first); with no attempt yet, a group "before the first segment"."""
    found = next((a for a in reversed(attempts)
                  if a["started_at"] is not None and a["started_at"] <= when), None)
    if found is None and attempts:
        found = attempts[0]
    if found is None:
        found = {"number": 0, "attempt": 1, "started_at": None, "ended_at": None,
                 "ended_as": "", "interrupts": [], "usage": []}
        attempts.insert(0, found)
    return found
