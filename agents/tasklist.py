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
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

from django.conf import settings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.catalog import DOC_REF
from agents.chat_model import get_chat_model, offline_skill
from hitl.ask import hitl_review

MAX_REVISION_ROUNDS = 2
DOCS_DIR = Path(settings.BASE_DIR) / "docs" / "versions"
COMMAND_RE = re.compile(r"^\s*/tasklist\s+@(" + DOC_REF + r")\s*$")
FEATURE_RE = re.compile(r"^\s*[-*]\s+(?P<title>.+?)\s*\((?P<days>\d+)\s*d\)\s*$")


# --- schemas ------------------------------------------------------------------------

class SplitStrategy(BaseModel):
    """How to split the version plan into tasks."""

    model_config = ConfigDict(extra="forbid")
    approach: Literal["by_feature", "by_layer"] = Field(
        description="by_feature: one task per feature; by_layer: backend and frontend tasks")
    max_task_days: int = Field(ge=1, le=10, description="largest task size allowed, in days")
    include_tests: bool = Field(description="add a test task per feature")
    rationale: str = Field(default="", max_length=500, description="why this split")


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=200)
    days: int = Field(ge=1, le=100)
    feature: str = Field(min_length=1, max_length=200)


class TasklistDraft(BaseModel):
    """The tasks of the version, in order."""

    model_config = ConfigDict(extra="forbid")
    tasks: list[Task] = Field(min_length=1, max_length=100)

    @model_validator(mode="after")
    def _unique(self) -> TasklistDraft:
        titles = [t.title for t in self.tasks]
        if len(set(titles)) != len(titles):
            raise ValueError("task titles must be unique")
        return self


def _closed_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


STRATEGY_SCHEMA = _closed_schema(SplitStrategy)
DRAFT_SCHEMA = _closed_schema(TasklistDraft)


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


# --- reading and judging the plan ----------------------------------------------------

class DocumentMissing(Exception):
    pass


@tool
def read_version_plan(ref: str, config: RunnableConfig) -> str:
    """Read a version plan: docs://versions/<name>.md (shipped) or docs://uploads/<name>.md."""
    return read_document(ref, config["configurable"]["thread_id"])


def read_document(ref: str, thread_id: str) -> str:
    """Text of a shipped (``docs://versions/``) or uploaded (``docs://uploads/``) plan."""
    match = re.fullmatch(DOC_REF, ref or "")
    if not match:
        raise DocumentMissing(f"{ref!r} is not a docs://versions/ or docs://uploads/ path")
    name = ref.rsplit("/", 1)[1]
    if match.group(1) == "versions":
        path = DOCS_DIR / name
        if not path.is_file():
            raise DocumentMissing(f"{ref} does not exist")
        return path.read_text(encoding="utf-8")
    from agentsite.errors import NotFound
    from runs.models import Conversation
    from workspace.services import document_read

    owner_id = Conversation.objects.filter(pk=thread_id).values_list("owner_id", flat=True).first()
    try:
        return document_read(owner_id=owner_id, name=name)
    except NotFound:
        raise DocumentMissing(f"{ref} was not uploaded by you") from None


def parse_plan(text: str) -> tuple[str, dict[str, str], list[dict[str, Any]]]:
    """(title, sections by lower-case heading, scope features with their estimates)."""
    title, sections, current = "", {}, None
    for line in text.splitlines():
        if line.startswith("# ") and not title:
            title = line[2:].strip()
        elif line.startswith("## "):
            current = line[3:].strip().lower()
            sections[current] = ""
        elif current is not None:
            sections[current] += line + "\n"
    features = []
    for line in sections.get("scope", "").splitlines():
        m = FEATURE_RE.match(line)
        if m:
            features.append({"title": m["title"], "days": int(m["days"])})
    return title, sections, features


def judge(text: str) -> tuple[list[str], str, list[dict[str, Any]]]:
    """Why the plan is not enough to split (empty list: it is), its title and features."""
    title, sections, features = parse_plan(text)
    problems = []
    if not sections.get("goal", "").strip():
        problems.append("it has no '## Goal' section saying what the version is for")
    scope_items = [ln for ln in sections.get("scope", "").splitlines() if ln.strip()[:1] in "-*"
                   and ln.strip()]
    if not scope_items:
        problems.append("it has no '## Scope' list of features")
    elif len(features) < len(scope_items):
        problems.append("some scope items have no estimate like '(3d)'")
    return problems, title, features


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


def build(deps: Deps | None = None) -> StateGraph:
    deps = deps or Deps()

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

    def decide_strategy(state: TasklistState) -> dict[str, Any]:
        feedback = state.get("feedback") or []
        prompt = "Version plan:\n" + state["plan"] + "\n" + "".join(
            f"Reviewer feedback: {f}\n" for f in feedback)
        strategy = _structured(deps, SplitStrategy).invoke(
            [SystemMessage(STRATEGY_PROMPT), HumanMessage(prompt)])
        return {"strategy": strategy.model_dump(), "strategy_decision": "",
                "messages": [_say("Proposed split strategy: " + _describe(strategy.model_dump())
                                  + ". Waiting for your review.")],
                "trace": ["decide_strategy"]}

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
            update["messages"] = [_say("Strategy edited: " + _describe(update["strategy"]) + ".")]
        elif decision == "reject":
            reason = answer.get("reason") or "strategy rejected in review"
            update.update(outcome="rejected", outcome_reason=reason,
                          messages=[_say(f"Stopped: the strategy was rejected ({reason}).")])
        elif decision == "respond":
            update["feedback"] = (state.get("feedback") or []) + [answer["feedback"]]
        return update

    def generate_draft(state: TasklistState) -> dict[str, Any]:
        prompt = ("Version plan:\n" + state["plan"] + "\n"
                  + _json_block("Strategy", state["strategy"]))
        draft = _structured(deps, TasklistDraft).invoke(
            [SystemMessage(DRAFT_PROMPT), HumanMessage(prompt)])
        tasks = [t.model_dump() for t in draft.tasks]
        return {"draft": tasks, "revisions": 0,
                "messages": [_say(f"Drafted {len(tasks)} tasks.")], "trace": ["generate_draft"]}

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

    def revise_draft(state: TasklistState) -> dict[str, Any]:
        round_no = state.get("revisions", 0) + 1
        prompt = (_json_block("Draft", {"tasks": state["draft"]})
                  + _json_block("Strategy", state["strategy"])
                  + "Issues:\n" + "".join(f"- {i}\n" for i in state["issues"])
                  + (f"Reviewer feedback: {state['revision_feedback']}\n"
                     if state.get("revision_feedback") else ""))
        draft = _structured(deps, TasklistDraft).invoke(
            [SystemMessage(REVISE_PROMPT), HumanMessage(prompt)])
        tasks = [t.model_dump() for t in draft.tasks]
        return {"draft": tasks, "revisions": round_no,
                "messages": [_say(f"Revision {round_no}: {len(tasks)} tasks.")],
                "trace": ["revise_draft"]}

    def finalize(state: TasklistState) -> dict[str, Any]:
        markdown = render(state)
        result = {"doc": state["doc"], "title": state["title"], "strategy": state["strategy"],
                  "tasks": state["draft"], "revisions": state.get("revisions", 0),
                  "open_issues": state.get("issues") or [],
                  "warnings": state.get("warnings") or [], "markdown": markdown}
        return {"result": result, "outcome": "completed", "messages": [_say(markdown)],
                "trace": ["finalize"]}

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

    graph = StateGraph(TasklistState)
    for node in (read_plan, judge_plan, decide_strategy, strategy_review, generate_draft,
                 validate_draft, revision_review, revise_draft, finalize):
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


# --- domain rules (no model) -----------------------------------------------------------

def validate(tasks: list[dict[str, Any]], strategy: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(issues that need immediate revision, warnings that do not)."""
    cap = strategy["max_task_days"]
    issues = [f"'{t['title']}' is {t['days']}d, over the {cap}-day cap" for t in tasks
              if t["days"] > cap]
    warnings = []
    total = sum(t["days"] for t in tasks)
    if total > 30:
        warnings.append(f"{total} days in total: consider splitting the release")
    return issues, warnings


def _describe(strategy: dict[str, Any]) -> str:
    approach = strategy["approach"].replace("_", " ")
    tests = "with" if strategy["include_tests"] else "without"
    return f"{approach}, tasks of at most {strategy['max_task_days']}d, {tests} test tasks"


def render(state: TasklistState) -> str:
    tasks = state["draft"]
    lines = [f"## Tasklist — {state['title']}", "",
             f"Strategy: {_describe(state['strategy'])}. "
             f"Revision rounds: {state.get('revisions', 0)}.", ""]
    lines += [f"- [ ] **T{i}** {t['title']} — {t['days']}d" for i, t in enumerate(tasks, 1)]
    lines += ["", f"Total: {sum(t['days'] for t in tasks)} days over {len(tasks)} tasks."]
    if state.get("issues"):
        lines += ["", f"### Open issues (not fixed after {MAX_REVISION_ROUNDS} revision rounds)"]
        lines += [f"- {i}" for i in state["issues"]]
    if state.get("warnings"):
        lines += ["", "### Warnings"] + [f"- {w}" for w in state["warnings"]]
    return "\n".join(lines)


# --- what the offline model does for this agent ---------------------------------------

def _last_human(messages: list[BaseMessage]) -> str:
    return next((str(m.content) for m in reversed(messages) if isinstance(m, HumanMessage)), "")


def _read_json_block(text: str, label: str) -> Any:
    m = re.search(label + r":\n```json\n(.*?)\n```", text, re.S)
    return json.loads(m.group(1)) if m else None


@offline_skill("SplitStrategy")
def _offline_strategy(messages: list[BaseMessage]) -> dict[str, Any]:
    text = _last_human(messages)
    feedback = " ".join(re.findall(r"^Reviewer feedback: (.*)$", text, re.M)).lower()
    strategy = {"approach": "by_feature", "max_task_days": 3, "include_tests": False,
                "rationale": "one task per scope item keeps ownership clear"}
    if "layer" in feedback:
        strategy.update(approach="by_layer", rationale="split along backend and frontend")
    if m := re.search(r"(\d+)\s*-?\s*days?", feedback):
        strategy["max_task_days"] = max(1, min(10, int(m.group(1))))
    if "test" in feedback:
        strategy["include_tests"] = not re.search(r"\b(no|without|skip)\b[^.]*test", feedback)
    return strategy


@offline_skill("TasklistDraft")
def _offline_draft(messages: list[BaseMessage]) -> dict[str, Any]:
    text = _last_human(messages)
    strategy = _read_json_block(text, "Strategy")
    draft = _read_json_block(text, "Draft")
    if draft is not None:  # revision: halve every task over the cap, keep the rest
        tasks = []
        for t in draft["tasks"]:
            if t["days"] <= strategy["max_task_days"]:
                tasks.append(t)
                continue
            base, part = re.match(r"^(.*?)(?: \(part ([\d.]+)\))?$", t["title"]).groups()
            prefix = f"{part}." if part else ""
            tasks += [{**t, "title": f"{base} (part {prefix}1)", "days": math.ceil(t["days"] / 2)},
                      {**t, "title": f"{base} (part {prefix}2)", "days": t["days"] // 2}]
        return {"tasks": tasks}
    _, _, features = parse_plan(text.split("Strategy:\n", 1)[0])
    tasks = []
    for f in features:
        if strategy["approach"] == "by_layer" and f["days"] > 1:
            tasks.append({"title": f"{f['title']}: backend", "days": math.ceil(f["days"] / 2),
                          "feature": f["title"]})
            tasks.append({"title": f"{f['title']}: frontend", "days": f["days"] // 2,
                          "feature": f["title"]})
        else:
            tasks.append({"title": f["title"], "days": f["days"], "feature": f["title"]})
        if strategy["include_tests"]:
            tasks.append({"title": f"{f['title']}: tests", "days": 1, "feature": f["title"]})
    return {"tasks": tasks}


def initial_state(data: BaseModel, message: str) -> dict[str, Any]:
    doc = data.doc
    if not doc and message and (m := COMMAND_RE.match(message)):
        doc = m.group(1)
    state: dict[str, Any] = {"doc": doc or "", "trace": [], "revisions": 0}
    if message:
        state["messages"] = [HumanMessage(content=message)]
    return state
