from django.urls import path

from pages import fork, presence, views

app_name = "pages"

urlpatterns = [
    path("", views.conversation_list, name="list"),
    path("new/", views.new_chat, name="new"),
    path("presence/", presence.heartbeat, name="presence"),
    path("new/<str:agent>/", views.new_chat, name="new-agent"),
    path("c/<str:conversation_id>/", views.chat, name="chat"),
    path("c/<str:conversation_id>/composer/", views.composer_fragment, name="composer"),
    path("c/<str:conversation_id>/runs/<str:run_id>/", views.run_fragment, name="run"),
    path("c/<str:conversation_id>/answer/<str:interrupt_id>/", views.answer, name="answer"),
    path("c/<str:conversation_id>/fork/<str:interrupt_id>/", fork.fork, name="fork"),
    path("c/<str:conversation_id>/send/", views.send, name="send"),
    path("c/<str:conversation_id>/cancel/", views.cancel, name="cancel"),
    path("c/<str:conversation_id>/runs/<str:run_id>/retry/", views.retry, name="retry"),
]
