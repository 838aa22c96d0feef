"""The REST API (`/api/`) and its live event streams."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from api.fork import InterruptForkView
from api.interrupts import InterruptViewSet
from api.runs import AgentListView, ConversationViewSet, RunViewSet
from streams.grip import held
from streams.keys import run_channel
from streams.sse import QueueEventsView, RunEventsView
from workspace.api import DocumentViewSet

router = DefaultRouter(trailing_slash=True)
router.register("runs", RunViewSet, basename="run")
router.register("interrupts", InterruptViewSet, basename="interrupt")
router.register("conversations", ConversationViewSet, basename="conversation")
router.register("documents", DocumentViewSet, basename="document")

urlpatterns = [
    path("agents/", AgentListView.as_view(), name="agents"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="schema"), name="api-redoc"),
    # Any id reaches the view, so a malformed one is a JSON 404 like the rest of the API.
    # Behind a GRIP proxy (GRIP_URL) the proxy holds the streams (streams/grip.py).
    path("runs/<str:run_id>/events/",
         held(RunEventsView.as_view(), lambda run_id: run_channel(run_id)), name="run-events"),
    path("events/", held(QueueEventsView.as_view(), lambda: None), name="queue-events"),
    path("interrupts/<str:pk>/fork/", InterruptForkView.as_view(), name="interrupt-fork"),
    path("", include(router.urls)),
]
