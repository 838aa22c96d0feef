"""The LangGraph Platform API's URLs, under settings.LANGGRAPH_API_PREFIX (default /lg/)."""

from django.urls import path, re_path

from lgapi import views

urlpatterns = [
    path("info", views.info),
    path("assistants", views.assistants),
    path("assistants/search", views.assistants_search),
    path("assistants/count", views.assistants_count),
    path("assistants/<str:assistant_id>", views.assistant),
    path("assistants/<str:assistant_id>/graph", views.assistant_graph),
    path("assistants/<str:assistant_id>/schemas", views.assistant_schemas),
    path("assistants/<str:assistant_id>/subgraphs", views.assistant_subgraphs),
    path("assistants/<str:assistant_id>/subgraphs/<path:namespace>", views.assistant_subgraphs),
    path("assistants/<str:assistant_id>/versions", views.assistant_versions),
    path("assistants/<str:assistant_id>/latest", views.assistant_latest),
    path("threads", views.threads),
    path("threads/search", views.threads_search),
    path("threads/count", views.threads_count),
    path("threads/prune", views.not_implemented),  # before threads/<id>, which it would match
    path("threads/<str:thread_id>", views.thread),
    path("threads/<str:thread_id>/state", views.thread_state_view),
    path("threads/<str:thread_id>/state/checkpoint", views.thread_state_checkpoint_post),
    path("threads/<str:thread_id>/state/<str:checkpoint_id>", views.thread_state_checkpoint),
    path("threads/<str:thread_id>/history", views.thread_history_view),
    path("threads/<str:thread_id>/runs", views.thread_runs),
    path("threads/<str:thread_id>/runs/stream", views.runs_stream),
    path("threads/<str:thread_id>/runs/wait", views.runs_wait),
    path("threads/<str:thread_id>/runs/crons", views.not_implemented),
    path("threads/<str:thread_id>/stream", views.not_implemented),
    path("threads/<str:thread_id>/runs/<str:run_id>", views.run),
    path("threads/<str:thread_id>/runs/<str:run_id>/cancel", views.run_cancel_view),
    path("threads/<str:thread_id>/runs/<str:run_id>/join", views.run_join),
    path("threads/<str:thread_id>/runs/<str:run_id>/stream", views.run_stream),
    path("threads/<str:thread_id>/runs/<str:run_id>/stream/held", views.run_stream_held),
    path("runs", views.stateless_runs),
    path("runs/stream", views.runs_stream),
    path("runs/wait", views.runs_wait),
    # Out of scope (docs/langgraph-api.md): a 501 in the Platform's error shape.
    re_path(r"^(?:crons|store)(?:/.*)?$", views.not_implemented),
    re_path(r"^runs/(?:batch|crons|cancel)$", views.not_implemented),
    re_path(r"^threads/[^/]+/copy$", views.not_implemented),
    re_path(r"^.*$", views.not_found),
]
