"""Interrupt formats: one class per way a graph can ask (``hitl.formats.base``).

``recognise`` picks a raw value's format once, when the worker stores the interrupt;
``for_interrupt`` gives a stored interrupt's format back from its ``kind``. Recognition
order matters: the most specific shapes first, ``generic`` last (it takes anything).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hitl.formats.base import (
    CANCELS_RUN,
    CardFormError,
    InterruptFormat,
    Subject,
    Vote,
)
from hitl.formats.generic import Generic, SchemaForm
from hitl.formats.inbox import AgentInbox
from hitl.formats.middleware import HitlRequest, ToolApproval
from hitl.formats.ours import OURS
from hitl.kinds import InvalidAnswer

if TYPE_CHECKING:
    from hitl.models import AgentInterrupt

FORMATS: list[type[InterruptFormat]] = [
    *OURS, ToolApproval, HitlRequest, AgentInbox, SchemaForm, Generic]
BY_NAME: dict[str, type[InterruptFormat]] = {f.name: f for f in FORMATS}

__all__ = ["BY_NAME", "CANCELS_RUN", "FORMATS", "CardFormError", "InterruptFormat", "InvalidAnswer",
           "Subject", "Vote", "by_name", "for_interrupt", "recognise"]


def recognise(value: Any, response_schema: dict[str, Any] | None = None,
              args_schemas: dict[str, Any] | None = None) -> InterruptFormat:
    """The first format that recognises ``value`` (``generic`` takes anything)."""
    schema = response_schema if isinstance(response_schema, dict) else None
    for fmt in FORMATS:
        try:
            if fmt.recognise(value, schema):
                return fmt(value, schema, args_schemas)
        except Exception:  # noqa: BLE001 - an odd value is shown generically, never a 500
            continue
    return Generic(value, schema)


def by_name(name: str, value: Any, response_schema: dict[str, Any] | None = None,
            args_schemas: dict[str, Any] | None = None) -> InterruptFormat:
    """The format stored as ``name`` over its raw value; an unknown name is generic."""
    return BY_NAME.get(name, Generic)(value, response_schema, args_schemas)


def for_interrupt(interrupt: AgentInterrupt) -> InterruptFormat:
    """A stored interrupt's format (``kind``, ``request``, ``response_schema``,
    ``args_schemas``)."""
    return by_name(interrupt.kind, getattr(interrupt, "request", None),
                   getattr(interrupt, "response_schema", None),
                   getattr(interrupt, "args_schemas", None))
