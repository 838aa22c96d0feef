import os

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
# Static files (admin CSS/JS, our pages' assets) are served by Django's ASGI static
# handler: it answers only under STATIC_URL and leaves every other request async.
application = ASGIStaticFilesHandler(get_asgi_application())

# AG-UI endpoints skip the middleware stack (why: agui/asgi.py).
from agui.asgi import route_agui  # noqa: E402

application = route_agui(application)

from agentsite import timing  # noqa: E402

if timing.enabled:  # benchmarks only (AGENTSITE_TIMING_LOG): stamp each request's arrival
    _inner = application

    async def application(scope, receive, send):  # noqa: ANN001, ANN201
        if scope["type"] == "http":
            timing.mark(scope["path"], "http_in")
        await _inner(scope, receive, send)
