"""A provider SDK's own retries are counted: the OpenAI SDK inside our HTTP client
(agents.chat_model's options) meets a 429 (or a refused connection), retries, and each
attempt is counted by model and outcome class, each retry by the class of the failure it
retried (observability.model_http), against the fake provider server."""

from __future__ import annotations

import openai
import pytest
from django.test import override_settings
from langchain.chat_models import init_chat_model
from prometheus_client import REGISTRY

from agents.chat_model import provider_options
from agentsite.processes import free_port
from tests.providers.fake_openai import MODEL

ATTEMPTS, RETRIES = "agentsite_model_http_attempts_total", "agentsite_model_http_retries_total"


def counted() -> dict[tuple[str, str, str], float]:
    """This process's attempt and retry samples: (name, model, outcome or class)."""
    return {(s.name, s.labels["model"], s.labels.get("outcome") or s.labels["class"]): s.value
            for family in REGISTRY.collect() for s in family.samples
            if s.name in (ATTEMPTS, RETRIES)}


def moved(before: dict, after: dict) -> dict:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def model_at(base_url: str, retries: int):
    with override_settings(MODEL_MAX_RETRIES=retries, MODEL_TIMEOUT_SECONDS=5,
                           OUTBOUND_ALLOW=["127.0.0.1", "localhost"]):
        return init_chat_model(f"openai:{MODEL}", base_url=base_url, api_key="test",
                               **provider_options("openai"))


def test_a_429_then_200_is_two_attempts_and_one_retry(provider):
    model = model_at(provider.base_url, retries=2)
    provider.fault("429", times=1, retry_after=0.1)
    before = counted()
    assert model.invoke("hello").content
    assert [r.answer for r in provider.requests()] == ["429", "ok"]
    assert moved(before, counted()) == {(ATTEMPTS, MODEL, "429"): 1,
                                        (ATTEMPTS, MODEL, "2xx"): 1,
                                        (RETRIES, MODEL, "429"): 1}


def test_a_refused_connection_retried_once_then_given_up():
    model = model_at(f"http://127.0.0.1:{free_port()}/v1", retries=1)
    before = counted()
    with pytest.raises(openai.APIConnectionError):
        model.invoke("hello")
    assert moved(before, counted()) == {(ATTEMPTS, MODEL, "connection"): 2,
                                        (RETRIES, MODEL, "connection"): 1}
