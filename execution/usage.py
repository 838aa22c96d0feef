"""Token usage of a segment's model calls, from LangChain's usage metadata.

A callback handler (LangChain's public ``on_llm_end``) sees every chat model call of the
graph, streamed or not, with the usage the provider reported (OpenAI-compatible bases
report it in streams only when asked: ``agents.chat_model`` turns ``stream_usage`` on).
"""

from __future__ import annotations

import threading
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from execution.lifecycle import Tokens


class UsageCounter(BaseCallbackHandler):
    """Sums the usage of the model calls it sees (thread-safe: parallel branches)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.input_tokens = self.output_tokens = self.total_tokens = 0
        self.model_name = ""
        # Set once the segment's pause or finish has recorded these (in its transaction).
        self.recorded = False

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                usage = getattr(message, "usage_metadata", None)
                if not usage:
                    continue
                meta = getattr(message, "response_metadata", None) or {}
                with self.lock:
                    self.calls += 1
                    self.input_tokens += int(usage.get("input_tokens") or 0)
                    self.output_tokens += int(usage.get("output_tokens") or 0)
                    self.total_tokens += int(usage.get("total_tokens") or 0)
                    self.model_name = str(meta.get("model_name") or meta.get("model")
                                          or self.model_name)[:200]

    def tokens(self) -> Tokens | None:
        """What the calls so far used; None when no call reported usage."""
        with self.lock:
            if not self.calls:
                return None
            return Tokens(model_name=self.model_name, calls=self.calls,
                          input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                          total_tokens=self.total_tokens)
