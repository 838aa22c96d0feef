"""Outbound requests (webhooks, model base URLs) refuse loopback, link-local, private and
metadata addresses, checked after DNS resolution at send time, unless ``OUTBOUND_ALLOW``
names them. The suite's own receivers listen on loopback, so its environment allows
127.0.0.1: these tests set the list themselves."""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.test import override_settings
from langchain.chat_models import init_chat_model

from agents.chat_model import provider_options
from agentsite.outbound import OutboundRefused, refused_reason, resolve_checked
from hitl.models import AgentWebhook, WebhookDelivery
from hitl.notify import deliver_webhook
from tests.providers.fake_openai import FakeProvider
from tests.security.test_request_limits import off_loop


class _Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.server.hits += 1  # type: ignore[attr-defined]
        self.server.hosts.append(self.headers["Host"])  # type: ignore[attr-defined]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.hits, server.hosts = 0, []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("address, reason", [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("169.254.169.254", "link-local"),
    ("10.1.2.3", "private"), ("192.168.0.10", "private"), ("172.16.5.4", "private"),
    ("fd00:ec2::254", "private"), ("::ffff:127.0.0.1", "loopback"),
    ("100.100.100.200", "not global"), ("0.0.0.0", "private"), ("8.8.8.8", None),
    ("2606:4700:4700::1111", None)])
def test_which_addresses_are_refused(address, reason):
    assert refused_reason(ipaddress.ip_address(address)) == reason


@override_settings(OUTBOUND_ALLOW=[])
def test_a_name_is_checked_by_what_it_resolves_to():
    with pytest.raises(OutboundRefused, match="localhost resolves to 127.0.0.1 .loopback"):
        resolve_checked("localhost", 80)
    with pytest.raises(OutboundRefused, match="metadata|link-local"):
        resolve_checked("169.254.169.254", 80)


@pytest.mark.parametrize("allow", [["127.0.0.1"], ["localhost"], ["127.0.0.0/8"],
                                   ["127.0.0.1:8081"]])
def test_the_allow_list_names_hosts_addresses_networks_and_ports(allow):
    with override_settings(OUTBOUND_ALLOW=allow):
        assert resolve_checked("localhost", 8081) in ("127.0.0.1", "::1") \
            or allow == ["127.0.0.1:8081"]
        if allow == ["127.0.0.1:8081"]:
            with pytest.raises(OutboundRefused):
                resolve_checked("127.0.0.1", 8082)  # another port


@pytest.mark.django_db
def test_a_webhook_to_an_internal_address_is_refused_unless_allowed(receiver):
    url = f"http://localhost:{receiver.server_port}/hook"
    hook = AgentWebhook.objects.create(agent="dev", url=url, secret="s")
    delivery = WebhookDelivery.objects.create(webhook=hook, event="run.finished", body={"a": 1})
    with override_settings(OUTBOUND_ALLOW=[]):
        assert deliver_webhook(delivery.pk) is False
    refused = WebhookDelivery.objects.get(pk=delivery.pk)
    assert "OutboundRefused" in refused.last_error and "loopback" in refused.last_error
    assert receiver.hits == 0  # nothing reached it
    with override_settings(OUTBOUND_ALLOW=[f"localhost:{receiver.server_port}"]):
        assert deliver_webhook(delivery.pk) is True
    assert receiver.hits == 1
    # Sent to the address it checked, with the URL's own host name (and SNI for HTTPS).
    assert receiver.hosts == [f"localhost:{receiver.server_port}"]
    assert WebhookDelivery.objects.get(pk=delivery.pk).status == "delivered"


@override_settings(MODEL_MAX_RETRIES=0, MODEL_TIMEOUT_SECONDS=5)
def test_a_model_base_url_to_an_internal_address_is_refused_unless_allowed():
    provider = FakeProvider().start()
    try:
        def model() -> Any:
            return init_chat_model("openai:gpt-4o-mini", base_url=provider.base_url,
                                   api_key="test", **provider_options("openai"))

        for ask in (lambda: model().invoke("hello"),
                    lambda: off_loop(lambda: asyncio.run(model().ainvoke("hello")))):
            with override_settings(OUTBOUND_ALLOW=[]), pytest.raises(Exception) as refused:
                ask()
            causes, error = [], refused.value
            while error is not None:
                causes.append(error)
                error = error.__cause__ or error.__context__
            assert any(isinstance(e, OutboundRefused) and "(loopback address)" in str(e)
                       for e in causes), causes
            assert provider.requests() == []
        with override_settings(OUTBOUND_ALLOW=["127.0.0.1"]):
            model().invoke("hello")
            off_loop(lambda: asyncio.run(model().ainvoke("hello")))
        assert len(provider.requests()) == 2
    finally:
        provider.stop()
