"""Django's ASGI handler with the middleware chain and the view in one thread hop.

Django builds its middleware chain for ASGI in async mode, so each sync middleware
step (``process_request``, ``process_view``, ``process_response`` of the
``MiddlewareMixin`` ones) and the sync view is a ``sync_to_async`` hop of its own: 16
hops per API request here (counted), each a round trip between the event loop and the
request's thread. Every view of ours under this handler is sync (the REST API, the
pages, the admin; the SSE views are sync views returning an async stream), so the chain
is built as under WSGI, all sync, and run with one hop into the request's thread: the
same middlewares in the same order, and Django's own sync request path
(``BaseHandler._get_response``: resolve, ``process_view``, the view, template
responses, exceptions). An async view would still work (Django calls it through
``async_to_sync``), at the cost of the hops back. Streaming responses are still sent
from the event loop by the ASGI handler. The AG-UI endpoints have their own handler
(``agui.asgi``).
"""

from __future__ import annotations

from django.core.handlers.asgi import ASGIHandler


class SyncChainASGIHandler(ASGIHandler):
    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)
        # The top of the sync chain, adapted once (Django's own adapter: sync_to_async
        # into the request's thread-sensitive thread).
        self._middleware_chain = self.adapt_method_mode(True, self._middleware_chain, False)
