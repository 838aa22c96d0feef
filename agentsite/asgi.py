import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")
django.setup(set_prefix=False)  # as get_asgi_application()

# The middleware chain and the (sync) views in one thread hop (why: agentsite/asgi_handler.py).
from agentsite.asgi_handler import SyncChainASGIHandler  # noqa: E402

application = SyncChainASGIHandler()

# Static files are answered before Django (agentsite/static_files.py).
from agentsite.static_files import with_static_files  # noqa: E402

application = with_static_files(application)

# AG-UI endpoints skip the middleware stack (why: agui/asgi.py).
from agui.asgi import route_agui  # noqa: E402

application = route_agui(application)

from agentsite import timing  # noqa: E402
from agentsite.startup_gc import freeze_startup_objects  # noqa: E402

if timing.enabled:  # benchmarks only (AGENTSITE_TIMING_LOG): stamp each request's arrival
    _inner = application

    async def application(scope, receive, send):  # noqa: ANN001, ANN201
        if scope["type"] == "http":
            timing.mark(scope["path"], "http_in")
        await _inner(scope, receive, send)

# Full collections skip what was loaded up to here (why: agentsite/startup_gc.py).
freeze_startup_objects()
