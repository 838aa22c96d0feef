"""Static files served by the app itself, in production too: ServeStatic (WhiteNoise's
fork with ASGI support; WhiteNoise itself is WSGI-only) in front of Django.

The files are those Django's finders find (static/ and the apps' static files; the
first match wins, as with collectstatic), indexed once at start, so the app serves its
own assets with no collectstatic step. As an ASGI wrapper, not a middleware: a static
request never enters Django, and Django's sync test client is unaffected.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from servestatic import ServeStaticASGI


def with_static_files(app: Any) -> ServeStaticASGI:
    static = ServeStaticASGI(app, autorefresh=settings.DEBUG,
                             max_age=0 if settings.DEBUG else 60)
    roots = [(storage.location, getattr(storage, "prefix", None) or "")
             for finder in finders.get_finders()
             for storage in getattr(finder, "storages", {}).values()]
    # A later add_files overrides an earlier one: add in reverse so the first match wins.
    for location, prefix in reversed(roots):
        static.add_files(location, prefix="/" + settings.STATIC_URL.strip("/") + "/" + prefix)
    return static
