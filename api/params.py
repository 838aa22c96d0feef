"""Query parameters shared by the REST endpoints."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.request import Request


def choice_param(request: Request, name: str, choices: list[str]) -> str | None:
    value = request.query_params.get(name)
    if value and value not in choices:
        raise ValidationError({name: [f"{value!r} is not one of {choices}"]})
    return value or None
