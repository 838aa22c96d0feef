"""Admin of API tokens (create: shown once; revoke) and of the security events (read only).
Lockouts are django-axes' own admin (Axes → Access attempts: delete one to unlock)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.template.response import TemplateResponse

from agentsite.admin_base import ReadOnlyAdmin
from agentsite.errors import ServiceError
from agentsite.models import ApiToken, SecurityEvent
from agentsite.token_auth import scopes_parse, token_issue, token_revoke


class ApiTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=ApiToken.Scope.choices,
                                       widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = ApiToken
        fields = ["user", "name", "expires_at"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "prefix", "scope", "legacy", "created_at", "expires_at",
                    "last_used_at", "revoked_at"]
    list_filter = ["legacy", "revoked_at"]
    search_fields = ["name", "user__username", "prefix"]
    list_select_related = ["user"]
    autocomplete_fields = ["user"]
    actions = ["revoke"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.issued: dict[int, str] = {}  # request id → the token just made (response_add)

    def get_form(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ApiTokenForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        if obj is None:
            return []
        return ["user", "scope", "prefix", "legacy", "created_at", "last_used_at",
                "revoked_at"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:  # name and expiry only
            super().save_model(request, obj, form, change)
            return
        token, raw = token_issue(user=obj.user, name=obj.name,
                                 scopes=scopes_parse(form.cleaned_data["scopes"]),
                                 expires_at=obj.expires_at, actor=request.user,
                                 request=request)
        obj.pk, obj.digest, obj.prefix, obj.scope = token.pk, token.digest, token.prefix, \
            token.scope
        self.issued[id(request)] = raw  # shown by response_add, kept nowhere

    def response_add(self, request: HttpRequest, obj: ApiToken,
                     post_url_continue: Any = None) -> Any:
        """The new token, once, in the answer itself (not in a message: those are kept
        in a cookie or the session until shown)."""
        raw = self.issued.pop(id(request), None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        context = {**self.admin_site.each_context(request), "title": "API token created",
                   "token": obj, "raw": raw, "opts": self.opts}
        response = TemplateResponse(request, "admin/agentsite/apitoken/issued.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: Any) -> None:
        done = 0
        for pk in queryset.values_list("pk", flat=True):
            try:
                token_revoke(token_id=pk, actor=request.user, request=request)
                done += 1
            except ServiceError as err:
                messages.error(request, err.detail)
        messages.success(request, f"Revoked {done} token(s).")


@admin.register(SecurityEvent)
class SecurityEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "kind", "username", "actor_label", "ip_address", "detail"]
    list_filter = ["kind"]
    search_fields = ["username", "actor_label", "ip_address"]
    date_hierarchy = "created_at"
