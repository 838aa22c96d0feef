"""``ask_*`` tools: the model asks the user, through the ``hitl_*`` helpers.

The seed's ``ASK_TOOLS``: each tool pauses the graph with one interaction kind and, on
resume, returns the answer as the tool result (a ToolMessage the model reads next).
They run inside a ToolNode; LangGraph re-runs that node on resume, so the AI message
that calls an ask tool should call nothing else with side effects.
"""

from __future__ import annotations

from langchain_core.tools import tool

from hitl.ask import hitl_input, hitl_modal, hitl_multi_select, hitl_select

# The one system-prompt fragment that teaches a model when to ask.
ASK_TOOLS_SYSTEM_PROMPT = """\
You can ask the user while you work, with these tools:
- ask_input: the request is too vague to act on; ask one short open question.
- ask_choice: the request fits several things; offer them and let the user pick one.
- ask_multi_choice: the user wants several of a set (compare, overview); let them pick.
- ask_confirm: before anything irreversible or costly; offer "proceed" / "cancel".
Ask only when you cannot proceed sensibly without the answer, ask once per missing
piece, and never ask what the conversation already answers. The tool result is the
user's answer: continue from it."""


@tool
def ask_input(question: str) -> str:
    """Ask the user an open question and wait for a free-text answer."""
    return f"User answered: {hitl_input(question, placeholder='Type your answer')}"


@tool
def ask_choice(question: str, options: list[str]) -> str:
    """Ask the user to pick exactly one of the options."""
    return f"User chose: {hitl_select(question, options)}"


@tool
def ask_multi_choice(question: str, options: list[str]) -> str:
    """Ask the user to pick one or more of the options."""
    return f"User chose: {', '.join(hitl_multi_select(question, options, min=1))}"


@tool
def ask_confirm(question: str, options: list[str] | None = None) -> str:
    """Ask the user to confirm before acting; options default to proceed / cancel."""
    actions = options or ["proceed", "cancel"]
    return f"User chose: {hitl_modal('Please confirm', question, actions, message=question)}"


ASK_TOOLS = [ask_input, ask_choice, ask_multi_choice, ask_confirm]
