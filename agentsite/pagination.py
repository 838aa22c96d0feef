"""Page-number pagination that refuses a bad ``page_size`` instead of ignoring it."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from agentsite.errors import InvalidInput


class Pagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        # DRF falls back to the default on junk; a client asking for -1 or "abc" has a bug
        # it should hear about.
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 6) or not (
                1 <= int(raw) <= self.max_page_size):
            problem = f"an integer from 1 to {self.max_page_size}"
            raise InvalidInput(f"page_size must be {problem}.", code="invalid",
                               fields={"page_size": [f"must be {problem}"]})
        return int(raw)

    def get_schema_operation_parameters(self, view: object) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update(minimum=1, maximum=self.max_page_size)
        return parameters
