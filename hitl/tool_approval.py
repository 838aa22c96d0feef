"""Tool approval: an agent marks tools whose calls a person must approve before they run.

In the spirit of LangChain's ``HumanInTheLoopMiddleware(interrupt_on={...})``: per tool,
the allowed decisions (approve / edit / reject, optionally respond) and a description.
- approve: the call runs as the model proposed it;
- edit: the call runs with the edited arguments, validated against the tool's argument
  schema (by the server before the resume, and again here);
- reject / respond: the tool never runs; the model gets an error ToolMessage naming the
  reason / the feedback, and carries on from there.

Two graph nodes: :func:`approval_node` (a review node: side-effect free, it only builds
``review`` interrupts and turns the decisions into a state update) and :func:`tools_node`
(runs the calls of the last AI message that have no result yet).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool

from hitl.ask import hitl_review

DECISIONS = ("approve", "edit", "reject", "respond")


@dataclass(frozen=True)
class ToolApproval:
    """How one tool's calls are reviewed."""

    description: str = ""
    allowed: tuple[str, ...] = ("approve", "edit", "reject")

    def __post_init__(self) -> None:
        unknown = set(self.allowed) - set(DECISIONS)
        if unknown or not self.allowed:
            raise ValueError(f"allowed decisions must be a non-empty subset of {DECISIONS}")


def args_schema(tool: BaseTool) -> dict[str, Any]:
    """JSON Schema of the tool's arguments, closed to unknown keys (the edit schema)."""
    schema = dict(tool.tool_call_schema.model_json_schema())
    schema["additionalProperties"] = False
    schema.pop("title", None)
    return schema


def pending_calls(messages: Sequence[AnyMessage]) -> tuple[AIMessage | None, list[dict]]:
    """The last AI message and those of its tool calls that have no ToolMessage yet."""
    answered: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            return message, [c for c in message.tool_calls if c["id"] not in answered]
    return None, []


def needs_approval(messages: Sequence[AnyMessage], policy: dict[str, ToolApproval]) -> bool:
    _, calls = pending_calls(messages)
    return any(c["name"] in policy for c in calls)


def approval_node(tools: Sequence[BaseTool], policy: dict[str, ToolApproval]
                  ) -> Callable[[dict[str, Any]], dict[str, Any]]:
    by_name = {t.name: t for t in tools}
    missing = set(policy) - set(by_name)
    if missing:
        raise ValueError(f"approval policy names unknown tools: {sorted(missing)}")

    def approve_tool_calls(state: dict[str, Any]) -> dict[str, Any]:
        # Review node: no model, no tool, no write before the interrupts below.
        message, calls = pending_calls(state["messages"])
        if message is None:
            return {}
        new_calls, results, changed = [], [], False
        for call in message.tool_calls:
            rule = policy.get(call["name"]) if call in calls else None
            if rule is None:
                new_calls.append(call)
                continue
            tool = by_name[call["name"]]
            answer = hitl_review(
                f"Approve the call to `{call['name']}`"
                + (f": {rule.description}" if rule.description else ""),
                proposal=dict(call["args"]), allowed=list(rule.allowed),
                edit_schema=args_schema(tool) if "edit" in rule.allowed else None,
                reason="tool_approval", tool=call["name"])
            decision = answer["decision"]
            if decision == "approve":
                new_calls.append(call)
            elif decision == "edit":
                # Validated against the schema by the server; the tool's own model is
                # the last word (types, defaults) before the call runs.
                clean = tool.tool_call_schema.model_validate(answer["edited"]).model_dump(
                    exclude_none=True)
                new_calls.append({**call, "args": clean})
                changed = True
            else:
                new_calls.append(call)  # keep it: every call needs its result message
                text = (f"The reviewer rejected this call to {call['name']}; it did not run."
                        + (f" Reason: {answer['reason']}" if answer.get("reason") else "")
                        if decision == "reject" else
                        f"The reviewer did not run {call['name']} and said: "
                        f"{answer['feedback']}")
                results.append(ToolMessage(content=text, tool_call_id=call["id"],
                                           name=call["name"], status="error"))
        update: list[AnyMessage] = []
        if changed:
            # Same id: add_messages replaces the AI message with the edited calls.
            update.append(message.model_copy(update={"tool_calls": new_calls}))
        return {"messages": update + results} if update or results else {}

    return approve_tool_calls


def tools_node(tools: Sequence[BaseTool]) -> Callable[..., dict[str, Any]]:
    """Run the pending tool calls of the last AI message (rejected ones have results)."""
    by_name = {t.name: t for t in tools}

    def run_tools(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        _, calls = pending_calls(state["messages"])
        results: list[AnyMessage] = []
        for call in calls:
            tool = by_name.get(call["name"])
            if tool is None:
                results.append(ToolMessage(content=f"Unknown tool {call['name']!r}",
                                           tool_call_id=call["id"], name=call["name"],
                                           status="error"))
                continue
            results.append(tool.invoke({**call, "type": "tool_call"}, config))
        return {"messages": results}

    return run_tools
