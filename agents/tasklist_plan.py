"""The Tasklist agent's domain, without the graph: the strategy and draft schemas, reading
and judging a version plan, the size rules, the markdown result, and what the offline
model answers for this agent. ``agents.tasklist`` wires these into the graph."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Literal

from django.conf import settings
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents.catalog import DOC_REF
from agents.chat_model import offline_skill

MAX_REVISION_ROUNDS = 2
DOCS_DIR = Path(settings.BASE_DIR) / "docs" / "versions"
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


def closed_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.pop("description", None)
    return schema


STRATEGY_SCHEMA = closed_schema(SplitStrategy)
DRAFT_SCHEMA = closed_schema(TasklistDraft)


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


def describe(strategy: dict[str, Any]) -> str:
    approach = strategy["approach"].replace("_", " ")
    tests = "with" if strategy["include_tests"] else "without"
    return f"{approach}, tasks of at most {strategy['max_task_days']}d, {tests} test tasks"


def render(state: dict[str, Any]) -> str:
    tasks = state["draft"]
    lines = [f"## Tasklist — {state['title']}", "",
             f"Strategy: {describe(state['strategy'])}. "
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
