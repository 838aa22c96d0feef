"""OpenTelemetry traces: one trace per answered segment, from the web request that
started or answered the run, through the Celery task (its context travels in the task
message: the Celery instrumentation's headers), the graph's nodes, model and tool calls
(``GraphSpans``, a LangChain callback handler), to the pause or end; Postgres and Redis
calls inside them.

Off unless the standard ``OTEL_*`` variables say where to export
(``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, or
``OTEL_TRACES_EXPORTER`` other than ``none``): then the web process (``agentsite.asgi``)
and each Celery process (``agentsite.celery``) call ``configure``. The exporter, sampler
and resource read the rest of ``OTEL_*`` themselves (the SDK's own environment rules).
"""

from __future__ import annotations

import os
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from opentelemetry import context as otel_context
from opentelemetry import trace

ATTR_RUN = "agentsite.run_id"
ATTR_SEGMENT = "agentsite.segment"
ATTR_INTERRUPT = "agentsite.interrupt_id"
ATTR_USER = "enduser.id"

_state: dict[str, Any] = {"provider": None, "instrumentors": []}


def wanted() -> bool:
    """Do the OTEL_* variables ask for traces?"""
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none" or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    return bool(exporter or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def enabled() -> bool:
    return _state["provider"] is not None


def configure(provider: Any = None, *, service: str = "agentsite") -> bool:
    """Start tracing in this process: ``provider`` (a test's, with its own exporter) or one
    exporting over OTLP/HTTP as OTEL_* says; then Django, Celery, psycopg and Redis are
    instrumented. Returns whether tracing is on. Once per process."""
    if enabled():
        return True
    if provider is None:
        if not wanted():
            return False
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create(
            {"service.name": os.environ.get("OTEL_SERVICE_NAME", service)}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.redis import RedisInstrumentor

    instrumentors = [DjangoInstrumentor(), CeleryInstrumentor(), PsycopgInstrumentor(),
                     RedisInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider)
    _state.update(provider=provider, instrumentors=instrumentors)
    return True


def unconfigure() -> None:
    """Undo ``configure`` (a test's provider): the instrumentations removed."""
    for instrumentor in _state["instrumentors"]:
        instrumentor.uninstrument()
    _state.update(provider=None, instrumentors=[])


def tracer() -> trace.Tracer:
    return trace.get_tracer("agentsite", tracer_provider=_state["provider"])


def segment_attributes(*, run_id: str, segment: int) -> None:
    """Name the run and segment on the current span (the worker's task span)."""
    span = trace.get_current_span()
    span.set_attribute(ATTR_RUN, run_id)
    span.set_attribute(ATTR_SEGMENT, segment)


def request_attributes(*, run_id: str, user_id: Any, interrupt_ids: Any = ()) -> None:
    """Name the run, the user and the interrupts answered on the request's span."""
    span = trace.get_current_span()
    span.set_attribute(ATTR_RUN, str(run_id))
    if user_id is not None:
        span.set_attribute(ATTR_USER, str(user_id))
    ids = [str(i) for i in interrupt_ids]
    if ids:
        span.set_attribute(ATTR_INTERRUPT, ids)


def paused(*, run_id: str, interrupt_ids: list[str]) -> None:
    """The segment ends in a pause: a span event on the current span."""
    trace.get_current_span().add_event("agentsite.pause", {
        ATTR_RUN: run_id, ATTR_INTERRUPT: interrupt_ids})


class GraphSpans(BaseCallbackHandler):
    """A span per graph node, model call and tool call (LangChain's callbacks, which
    LangGraph sends for each node as a chain), nested as the callbacks' parent run ids
    say, under the span current when the graph started (the worker's task span)."""

    def __init__(self, *, run_id: str, segment: int) -> None:
        self.attributes = {ATTR_RUN: run_id, ATTR_SEGMENT: segment}
        self.root = otel_context.get_current()
        self.spans: dict[UUID, trace.Span] = {}  # the spans started here, by callback run
        self.under: dict[UUID, trace.Span] = {}  # what a callback run's children hang under

    def _start(self, name: str, run_id: UUID, parent_run_id: UUID | None,
               **attributes: Any) -> None:
        parent = self.under.get(parent_run_id) if parent_run_id else None
        ctx = trace.set_span_in_context(parent) if parent is not None else self.root
        span = tracer().start_span(name, context=ctx, attributes={**self.attributes,
                                                                  **attributes})
        self.spans[run_id] = self.under[run_id] = span

    def _end(self, run_id: UUID, error: BaseException | None = None) -> None:
        self.under.pop(run_id, None)
        span = self.spans.pop(run_id, None)
        if span is None:
            return
        if error is not None and type(error).__name__ not in ("GraphInterrupt",
                                                              "GraphBubbleUp"):
            span.record_exception(error)
            span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))
        span.end()

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *,
                       run_id: UUID, parent_run_id: UUID | None = None,
                       metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        node = (metadata or {}).get("langgraph_node")
        name = kwargs.get("name") or node or "chain"
        # The graph itself and its nodes; the runnables inside a node are left out.
        if parent_run_id is None or (node and name == node):
            self._start(f"graph {name}" if parent_run_id is None else f"node {name}",
                        run_id, parent_run_id)
        elif parent_run_id in self.under:
            # Not a span of its own: what it starts hangs under its node.
            self.under[run_id] = self.under[parent_run_id]

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error)

    def on_chat_model_start(self, serialized: dict[str, Any], messages: Any, *,
                            run_id: UUID, parent_run_id: UUID | None = None,
                            **kwargs: Any) -> None:
        params = kwargs.get("invocation_params") or {}
        model = str(params.get("model") or params.get("model_name") or params.get("_type")
                    or "model")
        self._start(f"model {model}", run_id, parent_run_id, **{"gen_ai.request.model": model})

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error)

    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: str, *,
                      run_id: UUID, parent_run_id: UUID | None = None,
                      **kwargs: Any) -> None:
        name = kwargs.get("name") or (serialized or {}).get("name") or "tool"
        self._start(f"tool {name}", run_id, parent_run_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._end(run_id, error)


def graph_callbacks(*, run_id: str, segment: int) -> list[BaseCallbackHandler]:
    """The executor's extra callbacks: ``GraphSpans`` when tracing is on, else none."""
    return [GraphSpans(run_id=run_id, segment=segment)] if enabled() else []
