"""The OpenAPI schema is valid, documents every endpoint with its bodies and error codes,
and the browsable docs work offline (every asset served by us, nothing from a CDN)."""

from __future__ import annotations

import re

import pytest
from django.urls import get_resolver
from openapi_spec_validator import validate

pytestmark = pytest.mark.django_db(transaction=True)


def _api_routes() -> set[str]:
    """Every /api/ route of the URL conf, as OpenAPI path templates."""
    routes = set()

    def walk(patterns, prefix=""):
        for p in patterns:
            if hasattr(p, "url_patterns"):
                walk(p.url_patterns, prefix + str(p.pattern))
            else:
                routes.add(prefix + str(p.pattern))

    walk(get_resolver().url_patterns)
    out = set()
    for route in routes:
        if not route.startswith("api/") or route.startswith(("api/schema", "api/docs",
                                                             "api/redoc")):
            continue
        path = "/" + route.replace("^", "").replace("$", "")
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", path)
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", path)
        if r"\.(?" in path or "format" in path or path == "/api/":
            continue
        out.add(path.replace("{pk}", "{id}"))
    return out


def test_schema_is_valid_openapi_and_documents_everything(api):
    client = api("owner")
    response = client.get("/api/schema/", params={"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert schema["openapi"].startswith("3.")
    documented = set(schema["paths"])
    missing = _api_routes() - documented
    assert not missing, f"undocumented endpoints: {missing}"
    assert {"/api/runs/", "/api/runs/{id}/resume/", "/api/interrupts/{id}/decision/",
            "/api/conversations/{id}/messages/", "/api/agents/"} <= documented

    for path, item in schema["paths"].items():
        for method, op in item.items():
            codes = set(op["responses"])
            assert "401" in codes, (method, path)
            if method == "post":
                assert "requestBody" in op or path.endswith(("/cancel/", "/retry/")), (method, path)
                assert "404" in codes and "409" in codes, (method, path)
            if "requestBody" in op:
                assert "400" in codes and "415" in codes, (method, path)
    resume = schema["paths"]["/api/runs/{id}/resume/"]["post"]
    assert {"202", "400", "404", "409", "410", "422"} <= set(resume["responses"])
    assert "not_pending" in resume["responses"]["409"]["description"]
    error = schema["components"]["schemas"]["Error"]
    assert set(error["required"]) == {"code", "detail"}
    assert any(p["name"] == "Idempotency-Key" for p in resume["parameters"])


def test_docs_page_works_offline(api):
    client = api("owner")
    page = client.get("/api/docs/")
    assert page.status_code == 200
    html = page.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    scripts = re.findall(r'<script[^>]*src="([^"]+)"', html)
    assert assets and scripts
    for url in assets:
        assert not url.startswith(("http://", "https://", "//")), f"remote asset {url}"
        assert client.get(url).status_code == 200, url
    redoc = client.get("/api/redoc/")
    assert redoc.status_code == 200
    for url in re.findall(r'<script[^>]*src="([^"]+)"', redoc.text):
        assert not url.startswith(("http://", "https://", "//")) and \
            client.get(url).status_code == 200
