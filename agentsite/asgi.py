"""The ASGI application: Django's stock handler on pooled request threads, static files
answered before it."""

import os
import time

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentsite.settings")

from observability import tracing  # noqa: E402

# Traces when OTEL_* says where to (else off), instrumented before Django's handler loads.
tracing.configure(service="agentsite-web")
application = get_asgi_application()  # every path, /agui/ included, with all middleware

from observability.endpoint import serve_on_port  # noqa: E402

serve_on_port()  # METRICS_PORT: a container's private scrape port (docs/observability.md)

# Each request's thread-sensitive calls on a pooled thread (why: agentsite/request_threads.py).
from agentsite.request_threads import with_request_threads  # noqa: E402

application = with_request_threads(application)

# Static files are answered before Django (agentsite/static_files.py).
from agentsite.static_files import with_static_files  # noqa: E402

application = with_static_files(application)

from agentsite import timing  # noqa: E402
from agentsite.startup_gc import freeze_startup_objects  # noqa: E402

if timing.enabled:  # benchmarks only (AGENTSITE_TIMING_LOG): stamp each request's arrival
    _inner = application

    async def application(scope, receive, send):  # noqa: ANN001, ANN201
        if scope["type"] == "http":
            timing.mark(scope["path"], "http_in")
            scope["agentsite.arrived"] = time.time()  # read by the AG-UI views
        await _inner(scope, receive, send)

# Full collections skip what was loaded up to here (why: agentsite/startup_gc.py).
freeze_startup_objects()
