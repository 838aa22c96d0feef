"""Admin of the policy models: standing approvals (grant, revoke), agents' webhooks, their
delivery log and the notifications owed (the outbox). Imported by ``hitl.admin`` (Django's
autodiscover imports only ``hitl.admin``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from agentsite.admin_base import ReadOnlyAdmin
from hitl.models import AgentWebhook, Notification, StandingApproval, WebhookDelivery
from hitl.selectors import is_reviewer


@admin.register(StandingApproval)
class StandingApprovalAdmin(admin.ModelAdmin):
    list_display = ["id", "agent", "kind", "tool_name", "args_match", "expires_at", "granted_by",
                    "created_at", "active"]
    list_filter = ["agent", "kind"]
    fields = ["agent", "kind", "tool_name", "args_match", "expires_at", "note", "granted_by",
              "created_at", "revoked_at", "revoked_by"]
    readonly_fields = ["granted_by", "created_at", "revoked_at", "revoked_by"]
    actions = ["revoke_selected"]

    # A rule approves future interrupts in reviewers' stead: reviewers (hitl.decide_interrupt,
    # staff) see, grant and revoke them.
    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_staff and is_reviewer(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_staff and is_reviewer(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_staff and is_reviewer(request.user)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A rule is not edited in place (the audit names it): revoke it and grant another.
        return obj is None and request.user.is_staff and is_reviewer(request.user)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: StandingApproval, form: Any,
                   change: bool) -> None:
        if not change:
            obj.granted_by = request.user
        super().save_model(request, obj, form, change)

    @admin.display(boolean=True, description="active")
    def active(self, obj: StandingApproval) -> bool:
        return obj.revoked_at is None and (obj.expires_at is None
                                           or obj.expires_at > timezone.now())

    @admin.action(description="Revoke selected")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        # One UPDATE: the next interrupt the worker opens no longer matches.
        n = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now(),
                                                            revoked_by=request.user)
        self.message_user(request, f"{n} standing approval(s) revoked.", messages.SUCCESS)


@admin.register(AgentWebhook)
class AgentWebhookAdmin(admin.ModelAdmin):
    list_display = ["agent", "url", "active", "created_at"]
    list_filter = ["agent", "active"]


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    # ``url``: a run's own webhook (the LangGraph API's), when ``webhook`` is empty.
    list_display = ["id", "event", "webhook", "url", "status", "attempts", "last_status_code",
                    "created_at", "delivered_at"]
    list_filter = ["status", "event"]
    list_select_related = ["webhook"]


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ["id", "event", "run", "status", "attempts", "last_error", "created_at",
                    "sent_at"]
    list_filter = ["status", "event"]
