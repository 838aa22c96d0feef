"""Runs in the admin: read-only rows, a run's timeline, and "cancel run" through the service."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from agentsite.admin_base import ReadOnlyAdmin
from agentsite.errors import ServiceError
from execution.lifecycle import run_cancel
from hitl.models import AgentInterrupt
from hitl.selectors import decidable_runs
from runs.models import AgentRun, AuditLog, Conversation, Message


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


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "agent", "agent_version", "owner", "status", "segments", "created_at"]
    list_filter = ["status", "agent"]
    search_fields = ["id", "thread_id", "owner__username"]
    # The checkpoint sweep's bookkeeping, not something a reviewer acts on.
    exclude = ["checkpoints_pruned"]
    list_select_related = ["owner"]
    inlines = [AuditInline]
    change_form_template = "admin/runs/agentrun/change_form.html"

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
        return [path("<path:object_id>/cancel/", cancel, name="runs_agentrun_cancel"),
                *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if run is not None:
            extra["timeline"] = timeline(run)
            extra["cancel_url"] = (None if run.is_finished else
                                   reverse("admin:runs_agentrun_cancel", args=[run.pk]))
        return super().change_view(request, object_id, form_url, extra)

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


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ["id", "created_at", "actor_label", "surface", "action", "run",
                    "interrupt_ref", "from_status", "to_status"]
    list_filter = ["action", "surface"]
    search_fields = ["run__id", "interrupt_ref", "actor_label"]


def timeline(run: AgentRun) -> list[dict[str, Any]]:
    """The run's segments in order, each with the interrupts it asked and their answers.

    A segment starts when the run goes to ``running`` (audit rows are the record); an
    interrupt belongs to the segment during which it was created.
    """
    changes = list(run.audit_log.filter(action=AuditLog.Action.RUN_STATUS).order_by("id"))
    interrupts = list(run.interrupts.select_related("decided_by").order_by("created_at", "id"))
    segments: list[dict[str, Any]] = []
    for change in changes:
        if change.to_status == AgentRun.Status.RUNNING:
            segments.append({"number": len(segments) + 1, "started_at": change.created_at,
                             "ended_at": None, "ended_as": "", "interrupts": []})
        elif segments and segments[-1]["ended_at"] is None and change.from_status == "running":
            segments[-1]["ended_at"] = change.created_at
            segments[-1]["ended_as"] = change.to_status
    for item in interrupts:
        owner = segments[0] if segments else None
        for segment in segments:
            if segment["started_at"] <= item.created_at:
                owner = segment
        if owner is None:
            owner = {"number": 0, "started_at": None, "ended_at": None, "ended_as": "",
                     "interrupts": []}
            segments.insert(0, owner)
        item.decision_json = json.dumps(item.decision, indent=1, ensure_ascii=False)
        owner["interrupts"].append(item)
    return segments
