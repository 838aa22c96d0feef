"""Errors services raise; every surface (REST, AG-UI, admin) turns them into its own answer."""

from __future__ import annotations

from typing import Any


class ServiceError(Exception):
    status = 400
    code = "invalid"

    def __init__(self, detail: str, *, code: str | None = None,
                 fields: dict[str, Any] | None = None, status: int | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        if status:
            self.status = status
        self.fields = fields
        self.extra = extra or {}


class InvalidInput(ServiceError):
    status, code = 400, "invalid"


class Forbidden(ServiceError):
    status, code = 403, "forbidden"


class NotFound(ServiceError):
    status, code = 404, "not_found"


class Conflict(ServiceError):
    status, code = 409, "conflict"


class Gone(ServiceError):
    status, code = 410, "expired"


def pydantic_fields(err: Any, *, root: str = "body") -> dict[str, list[str]]:
    """A pydantic ``ValidationError`` as ``{dotted.field: [messages]}`` (the ``fields`` of
    every error answer); problems of the whole object go under ``root``."""
    fields: dict[str, list[str]] = {}
    for item in err.errors():
        key = ".".join(str(part) for part in item["loc"]) or root
        fields.setdefault(key, []).append(item["msg"])
    return fields
