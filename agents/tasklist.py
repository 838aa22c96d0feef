"""``tasklist``: the second seed's Tasklist agent (AI Mind v0.3.0).

``/tasklist @docs://versions/<name>.md`` (or input ``{doc}``) →
read_plan → judge_plan (insufficient → ``blocked``) → decide_strategy →
**strategy_review** (approve / edit against the strategy schema / reject → ``rejected``
/ respond → decide_strategy again) → generate_draft → validate_draft →
[**revision_review** → revise_draft → validate_draft]{0..2} → finalize.

Strategy review always happens; revision review only when validation finds something
that needs immediate revision, and at most two controlled revision rounds: after the
second, what is still wrong is listed as an open issue instead of a third round.

Review nodes are side-effect free: they build the interrupt payload and, on resume,
turn the decision into a state update (LangGraph re-runs a node from its start on
resume, so anything before ``interrupt()`` would run twice).
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from agents.catalog import DOC_REF
from agents.chat_model import get_chat_model
from agents.tasklist_plan import (
    DRAFT_SCHEMA,
    MAX_REVISION_ROUNDS,
    STRATEGY_SCHEMA,
    DocumentMissing,
    SplitStrategy,
    TasklistDraft,
    describe,
    judge,
    read_version_plan,
    render,
    validate,
)
from hitl.ask import hitl_review

COMMAND_RE = re.compile(r"^\s*/tasklist\s+@(" + DOC_REF + r")\s*$")


class TasklistState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    doc: str
    plan: str
    title: str
    features: list[dict[str, Any]]
    strategy: dict[str, Any]
    feedback: list[str]
    strategy_decision: str
    draft: list[dict[str, Any]]
    issues: list[str]
    warnings: list[str]
    revisions: int
    revision_action: str
    revision_feedback: str
    trace: Annotated[list[str], operator.add]
    result: dict[str, Any]
    outcome: str
    outcome_reason: str


# --- the graph ------------------------------------------------------------------------

@dataclass
class Deps:
    """What the nodes use from outside (a test may pass another chat model factory)."""

    model: Callable[[], BaseChatModel] = get_chat_model


def _say(text: str) -> AIMessage:
    # Each node's text is appended to the one assistant message: keep them apart.
    return AIMessage(content=text.rstrip() + "\n\n")


def _json_block(label: str, value: Any) -> str:
    return f"{label}:\n```json\n{json.dumps(value, ensure_ascii=False, indent=1)}\n```\n"


STRATEGY_PROMPT = """You plan how to split a software version plan into tasks.
Choose the approach (by_feature or by_layer), the largest task size in days
(max_task_days, usually 3), and whether to add a test task per feature. Follow the
reviewer's feedback when there is any. Reply with the SplitStrategy tool."""

DRAFT_PROMPT = """You write the tasklist of a software version from its plan and an approved
split strategy. Every scope feature becomes one or more tasks with a size in days. With
include_tests, add a '<feature>: tests' task of 1 day per feature. Reply with the
TasklistDraft tool."""

REVISE_PROMPT = """You revise a tasklist draft. Fix exactly the listed issues (split any task
over max_task_days into smaller tasks of the same feature; keep everything else as it is),
and follow the reviewer's feedback. Reply with the TasklistDraft tool."""


def _structured(deps: Deps, schema: type[BaseModel]) -> Any:
    # Internal structured calls do not stream into the chat: the nodes say what matters.
    return deps.model().with_structured_output(schema).with_config(tags=["nostream"])


# --- the nodes ----------------------------------------------------------------------

def read_plan(state: TasklistState, config: RunnableConfig) -> dict[str, Any]:
    doc = state.get("doc") or ""
    if not doc:
        reason = "no version plan given: send '/tasklist @docs://versions/<name>.md'"
        return {"outcome": "blocked", "outcome_reason": reason,
                "messages": [_say(f"Blocked: {reason}.")], "trace": ["read_plan"]}
    try:
        text = read_version_plan.invoke({"ref": doc}, config)
    except DocumentMissing as exc:
        return {"outcome": "blocked", "outcome_reason": str(exc),
                "messages": [_say(f"Blocked: {exc}.")], "trace": ["read_plan"]}
    return {"plan": text, "trace": ["read_plan"]}


def judge_plan(state: TasklistState) -> dict[str, Any]:
    problems, title, features = judge(state["plan"])
    if problems:
        reason = f"{state['doc']} is not enough to split into tasks: " + "; ".join(problems)
        return {"outcome": "blocked", "outcome_reason": reason, "title": title,
                "messages": [_say(f"Blocked: {reason}.")], "trace": ["judge_plan"]}
    return {"title": title or state["doc"], "features": features,
            "messages": [_say(f"Read **{title}**: {len(features)} scope items.")],
            "trace": ["judge_plan"]}


def strategy_review(state: TasklistState) -> dict[str, Any]:
    # Review node: no model, no tool, no write before the interrupt.
    answer = hitl_review(
        f"Review the split strategy for {state['title']}",
        proposal=state["strategy"], edit_schema=STRATEGY_SCHEMA,
        allowed=["approve", "edit", "reject", "respond"])
    decision = answer["decision"]
    update: dict[str, Any] = {"strategy_decision": decision, "trace": ["strategy_review"]}
    if decision == "edit":
        update["strategy"] = SplitStrategy.model_validate(answer["edited"]).model_dump()
        update["messages"] = [_say("Strategy edited: " + describe(update["strategy"]) + ".")]
    elif decision == "reject":
        reason = answer.get("reason") or "strategy rejected in review"
        update.update(outcome="rejected", outcome_reason=reason,
                      messages=[_say(f"Stopped: the strategy was rejected ({reason}).")])
    elif decision == "respond":
        update["feedback"] = (state.get("feedback") or []) + [answer["feedback"]]
    return update


def validate_draft(state: TasklistState) -> dict[str, Any]:
    issues, warnings = validate(state["draft"], state["strategy"])
    return {"issues": issues, "warnings": warnings, "trace": ["validate_draft"]}


def revision_review(state: TasklistState) -> dict[str, Any]:
    # Review node: no model, no tool, no write before the interrupt.
    round_no = state.get("revisions", 0) + 1
    answer = hitl_review(
        f"Revision {round_no} of at most {MAX_REVISION_ROUNDS} — the draft needs fixing: "
        + "; ".join(state["issues"]),
        proposal={"tasks": state["draft"]}, edit_schema=DRAFT_SCHEMA,
        allowed=["approve", "edit", "reject", "respond"])
    decision = answer["decision"]
    update: dict[str, Any] = {"revision_action": decision, "trace": ["revision_review"],
                              "revision_feedback": answer.get("feedback") or ""}
    if decision == "edit":
        edited = TasklistDraft.model_validate(answer["edited"])
        update["draft"] = [t.model_dump() for t in edited.tasks]
        update["revisions"] = round_no  # the user's own revision is a round too
        update["messages"] = [_say(f"Revision {round_no}: you edited the draft.")]
    elif decision == "reject":
        reason = answer.get("reason") or "revision rejected in review"
        update.update(outcome="rejected", outcome_reason=reason,
                      messages=[_say(f"Stopped: the revision was rejected ({reason}).")])
    return update


def finalize(state: TasklistState) -> dict[str, Any]:
    markdown = render(state)
    result = {"doc": state["doc"], "title": state["title"], "strategy": state["strategy"],
              "tasks": state["draft"], "revisions": state.get("revisions", 0),
              "open_issues": state.get("issues") or [],
              "warnings": state.get("warnings") or [], "markdown": markdown}
    return {"result": result, "outcome": "completed", "messages": [_say(markdown)],
            "trace": ["finalize"]}


@dataclass
class ModelNodes:
    """The nodes that call the chat model, with what they use from outside."""

    deps: Deps

    def decide_strategy(self, state: TasklistState) -> dict[str, Any]:
        feedback = state.get("feedback") or []
        prompt = "Version plan:\n" + state["plan"] + "\n" + "".join(
            f"Reviewer feedback: {f}\n" for f in feedback)
        strategy = _structured(self.deps, SplitStrategy).invoke(
            [SystemMessage(STRATEGY_PROMPT), HumanMessage(prompt)])
        return {"strategy": strategy.model_dump(), "strategy_decision": "",
                "messages": [_say("Proposed split strategy: " + describe(strategy.model_dump())
                                  + ". Waiting for your review.")],
                "trace": ["decide_strategy"]}

    def generate_draft(self, state: TasklistState) -> dict[str, Any]:
        prompt = ("Version plan:\n" + state["plan"] + "\n"
                  + _json_block("Strategy", state["strategy"]))
        draft = _structured(self.deps, TasklistDraft).invoke(
            [SystemMessage(DRAFT_PROMPT), HumanMessage(prompt)])
        tasks = [t.model_dump() for t in draft.tasks]
        return {"draft": tasks, "revisions": 0,
                "messages": [_say(f"Drafted {len(tasks)} tasks.")], "trace": ["generate_draft"]}

    def revise_draft(self, state: TasklistState) -> dict[str, Any]:
        round_no = state.get("revisions", 0) + 1
        prompt = (_json_block("Draft", {"tasks": state["draft"]})
                  + _json_block("Strategy", state["strategy"])
                  + "Issues:\n" + "".join(f"- {i}\n" for i in state["issues"])
                  + (f"Reviewer feedback: {state['revision_feedback']}\n"
                     if state.get("revision_feedback") else ""))
        draft = _structured(self.deps, TasklistDraft).invoke(
            [SystemMessage(REVISE_PROMPT), HumanMessage(prompt)])
        tasks = [t.model_dump() for t in draft.tasks]
        return {"draft": tasks, "revisions": round_no,
                "messages": [_say(f"Revision {round_no}: {len(tasks)} tasks.")],
                "trace": ["revise_draft"]}


# --- the edges ----------------------------------------------------------------------

def after_read(state: TasklistState) -> str:
    return END if state.get("outcome") else "judge_plan"


def after_judge(state: TasklistState) -> str:
    return END if state.get("outcome") else "decide_strategy"


def after_strategy_review(state: TasklistState) -> str:
    return {"reject": END, "respond": "decide_strategy"}.get(
        state["strategy_decision"], "generate_draft")


def after_validate(state: TasklistState) -> str:
    if state["issues"] and state.get("revisions", 0) < MAX_REVISION_ROUNDS:
        return "revision_review"
    return "finalize"


def after_revision_review(state: TasklistState) -> str:
    return {"reject": END, "edit": "validate_draft"}.get(state["revision_action"],
                                                         "revise_draft")


def build(deps: Deps | None = None) -> StateGraph:
    graph = StateGraph(TasklistState)
    models = ModelNodes(deps or Deps())
    for node in (read_plan, judge_plan, models.decide_strategy, strategy_review,
                 models.generate_draft, validate_draft, revision_review, models.revise_draft,
                 finalize):
        graph.add_node(node.__name__, node)
    graph.add_edge(START, "read_plan")
    graph.add_conditional_edges("read_plan", after_read, ["judge_plan", END])
    graph.add_conditional_edges("judge_plan", after_judge, ["decide_strategy", END])
    graph.add_edge("decide_strategy", "strategy_review")
    graph.add_conditional_edges("strategy_review", after_strategy_review,
                                ["decide_strategy", "generate_draft", END])
    graph.add_edge("generate_draft", "validate_draft")
    graph.add_conditional_edges("validate_draft", after_validate,
                                ["revision_review", "finalize"])
    graph.add_conditional_edges("revision_review", after_revision_review,
                                ["revise_draft", "validate_draft", END])
    graph.add_edge("revise_draft", "validate_draft")
    graph.add_edge("finalize", END)
    return graph


def initial_state(data: BaseModel, message: str) -> dict[str, Any]:
    doc = data.doc
    if not doc and message and (m := COMMAND_RE.match(message)):
        doc = m.group(1)
    state: dict[str, Any] = {"doc": doc or "", "trace": [], "revisions": 0}
    if message:
        state["messages"] = [HumanMessage(content=message)]
    return state
