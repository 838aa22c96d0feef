"""URL wiring: the top of the layers (it names every surface)."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path

from agui.views import agui_connect, agui_run
from api.health import healthz
from observability.endpoint import metrics_view
from observability.insights_view import insights_view
from pages.account import password_reset, token_revoke_view, tokens

urlpatterns = [
    # Before the admin's own paths (its catch-all would answer 404).
    path("admin/insights/", admin.site.admin_view(insights_view), name="admin-insights"),
    path("admin/", admin.site.urls),
    # Before Django's own: password-reset requests are limited (agentsite.throttles).
    path("accounts/password_reset/", password_reset, name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("account/tokens/", tokens, name="account-tokens"),
    path("account/tokens/<int:token_id>/revoke/", token_revoke_view,
         name="account-token-revoke"),
    path("api/", include("api.urls")),
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics_view, name="metrics"),
    path("agui/<str:agent>/", agui_run, name="agui-run"),
    path("agui/<str:agent>/connect/", agui_connect, name="agui-connect"),
    path(settings.LANGGRAPH_API_PREFIX, include("lgapi.urls")),
    path("", include("pages.urls")),
]

handler400 = "agentsite.api_errors.bad_request"
handler404 = "agentsite.api_errors.not_found"
handler500 = "agentsite.api_errors.server_error"
