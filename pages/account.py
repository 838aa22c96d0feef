"""Account pages: a user's own API tokens, and the limited password-reset request.

``/account/tokens/``: create (shown once) and revoke.

The new token is rendered in the answer to the POST that made it, never stored (not in
the session, not in a message) and never shown again: only its hash is kept
(``agentsite.token_auth``).
"""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from agentsite.client_ip import client_ip
from agentsite.errors import ServiceError
from agentsite.models import ApiToken, SecurityEvent
from agentsite.security_audit import security_event
from agentsite.throttles import limits_hit, throttled_response
from agentsite.token_auth import token_issue, token_revoke

EXPIRY_CHOICES = [("7", "in 7 days"), ("30", "in 30 days"), ("90", "in 90 days"),
                  ("365", "in a year"), ("", "never")]


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What it is for, e.g. “CI deploy bot”.")
    scopes = forms.MultipleChoiceField(choices=ApiToken.Scope.choices,
                                       widget=forms.CheckboxSelectMultiple, initial=["read"])
    expires = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="30", required=False,
                                label="Expires")


def _page(request: HttpRequest, form: TokenForm, new_token: str | None = None,
          status: int = 200) -> HttpResponse:
    tokens = ApiToken.objects.filter(user=request.user)
    response = render(request, "account/tokens.html", {
        "form": form, "tokens": tokens, "new_token": new_token, "now": timezone.now()},
        status=status)
    response["Cache-Control"] = "no-store"  # the page may hold a new token
    return response


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request, TokenForm())
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    days = form.cleaned_data["expires"]
    try:
        _, raw = token_issue(
            user=request.user, name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"], actor=request.user, request=request,
            expires_at=timezone.now() + timedelta(days=int(days)) if days else None)
    except ServiceError as err:
        for field, problems in (err.fields or {"__all__": [err.detail]}).items():
            for problem in problems:
                form.add_error(field if field in form.fields else None, problem)
        return _page(request, form, status=400)
    return _page(request, TokenForm(), new_token=raw)


@login_required
@require_http_methods(["POST"])
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token_revoke(token_id=token_id, owner=request.user, actor=request.user,
                     request=request)
    except ServiceError:
        pass  # not one of theirs (or gone): the list shows what is left
    return redirect("account-tokens")


class PasswordResetView(auth_views.PasswordResetView):
    """Django's password reset, limited per address and per e-mail address
    (``THROTTLE_PASSWORD_RESET_RATE``; 429 with Retry-After) and audited."""

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        email = (request.POST.get("email") or "").strip().lower()[:254]
        rate = settings.THROTTLE_PASSWORD_RESET_RATE
        wait = limits_hit([(f"reset-addr:{client_ip(request)}", rate),
                           (f"reset-email:{email}", rate)])
        security_event(kind=SecurityEvent.Kind.PASSWORD_RESET, username=email, actor=None,
                       request=request, refused=True if wait is not None else None)
        if wait is not None:
            return throttled_response(request, wait, "password-reset requests")
        return super().post(request, *args, **kwargs)


password_reset = PasswordResetView.as_view()
