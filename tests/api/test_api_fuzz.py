"""Schema fuzzing with schemathesis against the live server: no 5xx on any generated
request (valid and invalid), and every response conforms to the served OpenAPI schema.

Operations are driven one by one with hypothesis (schemathesis' pytest plugin does not
run under pytest 9 yet); valid ("positive") and invalid ("negative") cases for each.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.django_db(transaction=True)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
EXAMPLES_PER_MODE = 5


def test_api_fuzz(live, users, capsys):
    schema = schemathesis.openapi.from_url(f"{live['base_url']}/api/schema/?format=json")
    headers = {"Authorization": f"Token {users['owner_token']}"}
    counts: dict[str, int] = {}

    def fuzz(operation, mode) -> None:
        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES_PER_MODE, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck), database=None)
        def run(case):
            counts[operation.label] = counts.get(operation.label, 0) + 1
            case.call_and_validate(base_url=live["base_url"], headers=headers, checks=CHECKS)

        try:
            run()
        except Unsatisfiable:
            # Nothing in this operation can be made invalid (e.g. no parameters).
            if mode is GenerationMode.POSITIVE:
                raise

    for result in schema.get_all_operations():
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzz(result.ok(), mode)

    total = sum(counts.values())
    with capsys.disabled():
        print(f"\nschemathesis: {total} cases over {len(counts)} operations")
    assert len(counts) >= 12 and total >= 120, counts
