"""LangChain v1 ``HumanInTheLoopMiddleware``: batched (``HITLRequest``, answered with a
``HITLResponse``) and per call (``ToolApprovalRequest``, answered with one ``Decision``
checked against the interrupt's ``response_schema``). The shapes are the middleware's
own TypedDicts (restated here: web processes may not import ``langchain.agents``,
which is graph code; ``tests/unit/test_formats.py`` holds them to the library's); the
server checks an answer as the middleware would before anything is
committed, so a refused answer never reaches (and fails) the graph. One call's
``Decision`` (its schema, check, decline and summary) is ``hitl.formats.decisions``."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, NotRequired, TypedDict, get_type_hints

from hitl import card_parts, schema_form
from hitl.formats.base import (
    CANCELS_RUN,
    MESSAGE_MAX,
    CallDecision,
    CardFormError,
    InterruptFormat,
    Subject,
    Vote,
    clip,
    short_json,
)
from hitl.formats.decisions import (
    CALL_MAX,
    DECISIONS,
    DecisionType,
    call_decision,
    call_question,
    call_text,
    check_decision,
    decision_schema,
    decision_summary,
    declined,
    is_action,
)
from hitl.kinds import refuse
from hitl.schema_errors import by_field


class ActionRequest(TypedDict):
    name: str
    args: dict[str, Any]
    description: NotRequired[str]


class ReviewConfig(TypedDict):
    action_name: str
    allowed_decisions: list[DecisionType]
    args_schema: NotRequired[dict[str, Any]]


class HITLRequest(TypedDict):
    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]


class ToolApprovalRequest(TypedDict):
    type: Literal["tool_approval"]
    tool_call_id: str
    name: str
    args: dict[str, Any]
    description: str


# Keys recognition requires (read from the types).
_HITL_KEYS = set(get_type_hints(HITLRequest))
_APPROVAL_KEYS = set(get_type_hints(ToolApprovalRequest)) - {"description", "tool_call_id"}


class HitlRequest(InterruptFormat):
    """Batched: one ``HITLRequest`` per model turn; the answer (and resume value) is the
    ``HITLResponse`` ``{"decisions": [...]}``, one decision per action, in order."""

    name, label, template = "hitl_request", "Tool approval", "hitl/cards/hitl_request.html"
    bulk_approve: ClassVar[bool] = True
    quorum: ClassVar[bool] = True

    @classmethod
    def recognise(cls, value: Any, response_schema: dict[str, Any] | None) -> bool:
        if not isinstance(value, dict) or not _HITL_KEYS <= set(value):
            return False
        actions, configs = value.get("action_requests"), value.get("review_configs")
        return (isinstance(actions, list) and bool(actions) and all(map(is_action, actions))
                and isinstance(configs, list) and all(isinstance(c, dict) for c in configs))

    def actions(self) -> list[dict[str, Any]]:
        return list(self.value["action_requests"])

    def config(self, index: int) -> tuple[list[str], dict[str, Any] | None]:
        """(allowed decisions, args schema) of the action at ``index``: its review config
        by position (as the middleware builds them), else by tool name."""
        configs = self.value["review_configs"]
        name = self.actions()[index]["name"]
        found = configs[index] if index < len(configs) else None
        if not found or found.get("action_name") not in (None, name):
            found = next((c for c in configs if c.get("action_name") == name), None)
        allowed = [d for d in (found or {}).get("allowed_decisions") or DECISIONS
                   if d in DECISIONS] or list(DECISIONS)
        # The middleware never fills ``args_schema``: the tool's own schema, stored by the
        # worker when the run paused (``args_schemas``), is what the tool will check.
        schema = (found or {}).get("args_schema")
        if not isinstance(schema, dict):
            schema = self.args_schemas.get(name)
        return allowed, schema if isinstance(schema, dict) else None

    def tools(self) -> list[str]:
        return list(dict.fromkeys(a["name"] for a in self.actions()))

    def message(self) -> str:
        actions = self.actions()
        if len(actions) == 1:
            return call_question(actions[0]["name"], actions[0]["args"],
                                 actions[0].get("description"))
        each = max(CALL_MAX // len(actions), 30)
        return clip(f"Approve {len(actions)} tool calls: " + ", ".join(
            call_text(a["name"], a["args"], each) for a in actions), MESSAGE_MAX)

    def reason(self) -> str:
        return "tool_approval"

    def response_schema(self) -> dict[str, Any]:
        items = [decision_schema(a["name"], *self.config(i))
                 for i, a in enumerate(self.actions())]
        n = len(items)
        return {"type": "object", "title": "HITLResponse", "properties": {"decisions": {
            "type": "array", "prefixItems": items, "items": False, "minItems": n,
            "maxItems": n, "description": "one decision per action request, in order"}},
            "required": ["decisions"], "additionalProperties": False}

    def validate(self, answer: Any) -> Any:
        if not isinstance(answer, dict) or set(answer) != {"decisions"}:
            raise refuse("tool approval", {"payload": [
                'expected {"decisions": [...]} (one decision per action, in order)']})
        decisions, actions = answer["decisions"], self.actions()
        if not isinstance(decisions, list) or len(decisions) != len(actions):
            raise refuse("tool approval", {"decisions": [
                f"give exactly {len(actions)} decision{'s' if len(actions) > 1 else ''}, "
                "one per action, in order"]})
        fields: dict[str, list[str]] = {}
        for i, (decision, action) in enumerate(zip(decisions, actions, strict=True)):
            allowed, schema = self.config(i)
            _, problems = check_decision(decision, name=action["name"], allowed=allowed,
                                         args_schema=schema, at=f"decisions.{i}")
            fields.update(problems)
        if fields:
            raise refuse("tool approval", fields)
        return {"decisions": decisions}

    def cancelled_value(self) -> Any:
        # Every call rejected (what the person declined); the middleware's own reject.
        decisions = [declined(self.config(i)[0]) for i in range(len(self.actions()))]
        if any(d is CANCELS_RUN for d in decisions):
            return CANCELS_RUN
        return {"decisions": decisions}

    def approve_answer(self, because: str = "") -> Any | None:
        if not all("approve" in self.config(i)[0] for i in range(len(self.actions()))):
            return None
        return {"decisions": [{"type": "approve"} for _ in self.actions()]}

    def reject_answer(self, reason: str = "") -> Any | None:
        if not all("reject" in self.config(i)[0] for i in range(len(self.actions()))):
            return None
        one = {"type": "reject", **({"message": reason} if reason else {})}
        return {"decisions": [dict(one) for _ in self.actions()]}

    def vote(self, answer: Any) -> Vote | None:
        kinds = {d.get("type") for d in answer.get("decisions", [])} \
            if isinstance(answer, dict) else set()
        if kinds == {"approve"}:
            return Vote(True)
        if kinds == {"reject"}:
            return Vote(False, "; ".join(d["message"] for d in answer["decisions"]
                                         if d.get("message")))
        return None

    def subjects(self) -> list[Subject]:
        if self.approve_answer() is None:
            return []
        return [Subject("tool", a["name"], a["args"]) for a in self.actions()]

    def summary(self, answer: Any) -> str:
        decisions = answer.get("decisions") if isinstance(answer, dict) else None
        if not isinstance(decisions, list):
            return short_json(answer)
        return clip("; ".join(f"{a['name']}: {decision_summary(d)}"
                              for a, d in zip(self.actions(), decisions, strict=False)), 200)

    def call_decisions(self, answer: Any) -> list[CallDecision]:
        decisions = answer.get("decisions") if isinstance(answer, dict) else None
        return [call_decision(a, d) for a, d in zip(self.actions(), decisions or [],
                                                    strict=False)]

    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        rows, aliases = [], {}
        for i, action in enumerate(self.actions()):
            allowed, schema = self.config(i)
            row = card_parts.tool_row(
                name=action["name"], args=action["args"],
                description=action.get("description") or "", allowed=allowed,
                args_schema=schema, posted=posted, suffix=f".{i}", buttons=False)
            rows.append({**row, "index": i, "args_schema": schema})
            # validate()'s error names → the row's inputs
            aliases.update({f"decisions.{i}": f"decision.{i}",
                            f"decisions.{i}.type": f"decision.{i}",
                            f"decisions.{i}.message": f"message.{i}",
                            f"decisions.{i}.edited_action": f"decision.{i}"})
        return {"actions": rows, "answer": answer, "posted": posted or {},
                "approve_all": self.approve_answer() is not None, "error_aliases": aliases}

    def answer_from_post(self, data: Any) -> Any:
        decisions, problems = [], {}
        for i, action in enumerate(self.actions()):
            allowed, schema = self.config(i)
            try:
                decisions.append(card_parts.decision_from_post(
                    data, name=action["name"], allowed=allowed, args_schema=schema,
                    suffix=f".{i}"))
            except schema_form.FormProblems as err:
                problems.update(err.fields)
        if problems:
            raise CardFormError(problems)
        return {"decisions": decisions}


class ToolApproval(InterruptFormat):
    """Per call: one ``ToolApprovalRequest`` per gated call; the answer (and resume
    value) is one ``Decision``, which LangGraph checks against the interrupt's
    ``response_schema`` (so do we, first)."""

    name, label, template = "tool_approval", "Tool approval", "hitl/cards/tool_approval.html"
    bulk_approve: ClassVar[bool] = True
    quorum: ClassVar[bool] = True

    @classmethod
    def recognise(cls, value: Any, response_schema: dict[str, Any] | None) -> bool:
        return (isinstance(value, dict) and value.get("type") == "tool_approval"
                and _APPROVAL_KEYS <= set(value) and is_action(value))

    def allowed(self) -> list[str]:
        """The decision types the schema offers (all four without one)."""
        if not self.schema:
            return list(DECISIONS)
        branches = self.schema.get("oneOf") or self.schema.get("anyOf") or [self.schema]
        found = []
        for branch in branches:
            branch = self._resolve(branch)
            kind = ((branch.get("properties") or {}).get("type") or {})
            value = kind.get("const", (kind.get("enum") or [None])[0])
            if value in DECISIONS:
                found.append(value)
        return found or list(DECISIONS)

    def _resolve(self, node: Any) -> dict[str, Any]:
        """A local ``$ref`` ("#/$defs/X") of the response schema, followed."""
        if isinstance(node, dict) and isinstance(node.get("$ref"), str) \
                and node["$ref"].startswith("#/"):
            target: Any = self.schema
            for part in node["$ref"][2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            return target if isinstance(target, dict) else {}
        return node if isinstance(node, dict) else {}

    def args_schema(self) -> dict[str, Any] | None:
        """The edit's argument schema, as the response schema gives it (with its $defs)."""
        if not self.schema or "edit" not in self.allowed():
            return None
        for branch in self.schema.get("oneOf") or self.schema.get("anyOf") or [self.schema]:
            branch = self._resolve(branch)
            props = branch.get("properties") or {}
            if (props.get("type") or {}).get("const") == "edit":
                action = self._resolve(props.get("edited_action"))
                args = (action.get("properties") or {}).get("args")
                if isinstance(args, dict):
                    resolved = self._resolve(args)
                    return {**resolved, **({"$defs": self.schema["$defs"]}
                                           if "$defs" in self.schema else {})}
        return None

    def message(self) -> str:
        return call_question(self.value["name"], self.value["args"],
                             self.value.get("description"))

    def reason(self) -> str:
        return "tool_approval"

    def tool_call_id(self) -> str | None:
        found = self.value.get("tool_call_id")
        return found if isinstance(found, str) and found else None

    def response_schema(self) -> dict[str, Any]:
        return self.schema or decision_schema(self.value["name"], list(DECISIONS), None)

    def validate(self, answer: Any) -> Any:
        clean, fields = check_decision(answer, name=self.value["name"], allowed=self.allowed(),
                                       args_schema=self.args_schema(), at="")
        if fields:
            raise refuse("tool approval", fields)
        if self.schema:  # the interrupt's own schema is LangGraph's check on resume
            fields = by_field(self.schema, clean)
            if fields:
                raise refuse("tool approval", fields)
        return clean

    def cancelled_value(self) -> Any:
        return declined(self.allowed())

    def approve_answer(self, because: str = "") -> Any | None:
        return {"type": "approve"} if "approve" in self.allowed() else None

    def reject_answer(self, reason: str = "") -> Any | None:
        if "reject" not in self.allowed():
            return None
        return {"type": "reject", **({"message": reason} if reason else {})}

    def vote(self, answer: Any) -> Vote | None:
        kind = answer.get("type") if isinstance(answer, dict) else None
        if kind not in ("approve", "reject"):
            return None
        return Vote(kind == "approve", str(answer.get("message") or ""))

    def subjects(self) -> list[Subject]:
        if "approve" not in self.allowed():
            return []
        return [Subject("tool", self.value["name"], self.value["args"])]

    def summary(self, answer: Any) -> str:
        return clip(decision_summary(answer), 200)

    def call_decisions(self, answer: Any) -> list[CallDecision]:
        return [call_decision(self.value, answer, self.tool_call_id())]

    def card_context(self, answer: Any | None, posted: dict[str, Any] | None) -> dict[str, Any]:
        row = card_parts.tool_row(
            name=self.value["name"], args=self.value["args"],
            description=self.value.get("description") or "", allowed=self.allowed(),
            args_schema=self.args_schema(), posted=posted)
        return {"name": self.value["name"], "args": self.value["args"],
                "description": self.value.get("description") or "",
                "tool_call_id": self.value.get("tool_call_id"), "allowed": self.allowed(),
                "args_schema": self.args_schema(), "answer": answer, "posted": posted or {},
                "row": row, "inline_errors": ["decision"],
                "error_aliases": {"type": "decision", "edited_action": "decision"}}

    def answer_from_post(self, data: Any) -> Any:
        try:
            return card_parts.decision_from_post(
                data, name=self.value["name"], allowed=self.allowed(),
                args_schema=self.args_schema())
        except schema_form.FormProblems as err:
            raise CardFormError(err.fields) from None
