"""Model calls, tokens, failures and retries, counted by a LangChain callback handler
(its public callback API) that the executor hands to every graph run beside its usage
counter. Labelled by model name as the provider reports it (else the model's class)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from observability import metrics

UNKNOWN = "unknown"


def _model_of(serialized: dict[str, Any] | None, kwargs: dict[str, Any]) -> str:
    params = kwargs.get("invocation_params") or {}
    name = params.get("model") or params.get("model_name")
    if not name and serialized:
        name = (serialized.get("kwargs") or {}).get("model") or \
            (serialized.get("id") or [UNKNOWN])[-1]
    return str(name or UNKNOWN)[:100]


class ModelCallMetrics(BaseCallbackHandler):
    """Counts each chat model call once it returns (with the tokens it reports) or
    raises (by exception class), and each retry LangChain's ``with_retry`` makes."""

    def __init__(self) -> None:
        self.models: dict[UUID, str] = {}  # run id of a call in flight → its model

    def on_chat_model_start(self, serialized: dict[str, Any], messages: Any, *,
                            run_id: UUID, **kwargs: Any) -> None:
        self.models[run_id] = _model_of(serialized, kwargs)

    def on_llm_start(self, serialized: dict[str, Any], prompts: Any, *, run_id: UUID,
                     **kwargs: Any) -> None:
        self.models[run_id] = _model_of(serialized, kwargs)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        model = self.models.pop(run_id, UNKNOWN)
        input_tokens = output_tokens = 0
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                usage = getattr(message, "usage_metadata", None) or {}
                meta = getattr(message, "response_metadata", None) or {}
                model = str(meta.get("model_name") or meta.get("model") or model)[:100]
                input_tokens += int(usage.get("input_tokens") or 0)
                output_tokens += int(usage.get("output_tokens") or 0)
        metrics.MODEL_CALLS.labels(model).inc()
        if input_tokens:
            metrics.MODEL_TOKENS.labels(model, "input").inc(input_tokens)
        if output_tokens:
            metrics.MODEL_TOKENS.labels(model, "output").inc(output_tokens)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        model = self.models.pop(run_id, UNKNOWN)
        metrics.MODEL_FAILURES.labels(model, type(error).__name__[:60]).inc()

    def on_retry(self, retry_state: Any, *, run_id: UUID, **kwargs: Any) -> None:
        metrics.MODEL_RETRIES.labels(self.models.get(run_id, UNKNOWN)).inc()
