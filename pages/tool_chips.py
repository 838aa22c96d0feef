"""A run's tool chips: its tool calls (from its stored AG-UI events, ``pages.live``) with
what a person decided for the calls its questions gated (the format's
``call_decisions``): a rejected call did not run (no ✓), an edited one ran with the
edited arguments (shown, the agent's own beside them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hitl.formats.base import CallDecision
from hitl.models import AgentInterrupt
from pages.live import ToolCall

ANSWERED = (AgentInterrupt.Status.DECIDED, AgentInterrupt.Status.APPLIED)
# Decisions after which the tool did not run: what the chip says instead of ✓.
NOT_RUN = {"reject": "rejected", "respond": "answered instead"}


@dataclass
class Chip:
    id: str
    name: str
    args: str
    result: str | None
    decision: str = ""  # "approve", "edit", "reject", "respond", or "" (nobody was asked)
    asked_args: str = ""  # an edited call: the arguments the agent asked for

    @property
    def ran(self) -> bool:
        return self.result is not None and self.decision not in NOT_RUN

    @property
    def not_run(self) -> str:
        return NOT_RUN.get(self.decision, "")


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _text(args: Any) -> str:
    return json.dumps(args, ensure_ascii=False)


def chips(calls: list[ToolCall], interrupts: list[AgentInterrupt]) -> list[Chip]:
    """The chips of one run, in call order. A decision names its call by id when the
    question did (per call), else by tool name and arguments (batched), first match."""
    decided: list[CallDecision] = [
        d for item in interrupts if item.status in ANSWERED
        for d in item.format.call_decisions(item.decision)]
    out = []
    for call in calls:
        chip = Chip(id=call.id, name=call.name, args=call.args, result=call.result)
        args = _parsed(call.args)
        match = next((d for d in decided if d.tool_call_id == call.id), None) or next(
            (d for d in decided if d.tool_call_id is None and d.name == call.name
             and d.args == args), None)
        if match is not None:
            decided.remove(match)
            chip.decision = match.decision
            if match.decision == "edit" and match.ran_args is not None:
                chip.asked_args, chip.args = chip.args, _text(match.ran_args)
        out.append(chip)
    return out
