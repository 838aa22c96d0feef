from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from hitl.api import InterruptViewSet
from runs.agui_views import agui_connect, agui_run
from runs.api import AgentListView, ConversationViewSet, RunViewSet
from runs.sse import QueueEventsView, RunEventsView
from runs.views import healthz
from workspace.api import DocumentViewSet

router = DefaultRouter(trailing_slash=True)
router.register("runs", RunViewSet, basename="run")
router.register("interrupts", InterruptViewSet, basename="interrupt")
router.register("conversations", ConversationViewSet, basename="conversation")
router.register("documents", DocumentViewSet, basename="document")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/agents/", AgentListView.as_view(), name="agents"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("api/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    # Any id reaches the view, so a malformed one is a JSON 404 like the rest of the API.
    path("api/runs/<str:run_id>/events/", RunEventsView.as_view(), name="run-events"),
    path("api/events/", QueueEventsView.as_view(), name="queue-events"),
    path("api/", include(router.urls)),
    path("healthz", healthz, name="healthz"),
    path("agui/<str:agent>/", agui_run, name="agui-run"),
    path("agui/<str:agent>/connect/", agui_connect, name="agui-connect"),
]

handler404 = "agentsite.api_errors.not_found"
handler500 = "agentsite.api_errors.server_error"
