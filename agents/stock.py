"""``stock``: the first seed's ``tushare`` graph — resolve a stock, asking when needed.

resolve_stock looks the user's text up in a small shipped table of listed companies:
no name → an ``ask_input`` tool call; several matches → an ``ask_choice`` tool call
(the ask tools pause the run; their answers come back as tool results and resolve_stock
tries again); one match → answer, from the shipped data only.
"""

from __future__ import annotations

import json
import re
import uuid
from functools import cache
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from pydantic import BaseModel

from agents.chat_model import get_chat_model, offline_reply
from hitl.ask_tools import ASK_TOOLS
from hitl.tool_approval import tools_node

DATA = Path(__file__).resolve().parent / "data" / "companies.json"
MAX_ASKS = 3
ANSWER_PROMPT = ("Answer the question about the stock using only the data given, in two "
                 "sentences at most; quote the trade date.")
CODE_RE = re.compile(r"\b(\d{6})(?:\.(?:SH|SZ))?\b", re.I)


@cache
def companies() -> list[dict[str, Any]]:
    return json.loads(DATA.read_text(encoding="utf-8"))


def lookup(text: str) -> list[dict[str, Any]]:
    """Companies the text names: by code, alias or full name, else by industry or name word."""
    lowered = text.lower()
    codes = set(CODE_RE.findall(text))
    exact = [c for c in companies() if c["ts_code"][:6] in codes
             or c["name"].lower() in lowered
             or any(re.search(rf"(?<![a-z]){re.escape(a.lower())}(?![a-z])", lowered)
                    for a in c["aliases"])]
    if exact:
        return exact
    words = set(re.findall(r"[a-z]+", lowered))
    by_industry = [c for c in companies() if c["industry"].lower() in words]
    if by_industry:
        return by_industry
    return [c for c in companies()
            if words & {w for w in re.findall(r"[a-z]+", c["name"].lower()) if len(w) > 3}]


def _label(company: dict[str, Any]) -> str:
    return f"{company['name']} ({company['ts_code']})"


class StockState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    query: str
    asks: int
    stock: dict[str, Any]
    result: dict[str, Any]
    outcome: str
    outcome_reason: str


def _ask(tool: str, asks: int, **args: Any) -> dict[str, Any]:
    call = {"name": tool, "args": args, "id": f"call_{uuid.uuid4().hex[:16]}"}
    return {"messages": [AIMessage(content="", tool_calls=[call])], "asks": asks + 1}


def build() -> StateGraph:
    def resolve_stock(state: StockState) -> dict[str, Any]:
        last = state["messages"][-1] if state.get("messages") else None
        text = state.get("query", "")
        if isinstance(last, ToolMessage):
            answer = str(last.content).split(":", 1)[-1].strip()
            if last.name == "ask_choice":
                match = CODE_RE.search(answer)
                chosen = [c for c in companies() if match and c["ts_code"][:6] == match.group(1)]
                if len(chosen) == 1:
                    return {"stock": chosen[0]}
            text = answer
        asks = state.get("asks", 0)
        matches = lookup(text)
        if len(matches) == 1:
            return {"stock": matches[0], "query": text}
        if asks >= MAX_ASKS:
            return {"outcome": "blocked",
                    "outcome_reason": f"could not tell which stock is meant after {asks} questions",
                    "messages": [AIMessage(content="I could not tell which stock you mean.")]}
        if not matches:
            question = ("Which company or stock code do you mean?" if not text.strip() else
                        f"I found no listed company for “{text.strip()}”. Which company or "
                        "stock code do you mean?")
            return _ask("ask_input", asks, question=question)
        return _ask("ask_choice", asks, question=f"{len(matches)} companies match. Which one?",
                    options=[_label(c) for c in matches])

    def answer(state: StockState) -> dict[str, Any]:
        stock = state["stock"]
        model = get_chat_model()
        question = next((str(m.content) for m in state["messages"]
                         if isinstance(m, HumanMessage)), "") or state.get("query", "")
        reply = model.invoke([
            SystemMessage(ANSWER_PROMPT),
            HumanMessage(f"Question: {question or 'How is it doing?'}\nData:\n"
                         + json.dumps(stock, ensure_ascii=False))])
        return {"messages": [reply], "outcome": "completed",
                "result": {"stock": stock, "answer": str(reply.content)}}

    def route(state: StockState) -> str:
        if state.get("outcome"):
            return END
        if state.get("stock"):
            return "answer"
        return "tools"

    graph = StateGraph(StockState)
    graph.add_node("resolve_stock", resolve_stock)
    graph.add_node("tools", tools_node(ASK_TOOLS))
    graph.add_node("answer", answer)
    graph.add_edge(START, "resolve_stock")
    graph.add_conditional_edges("resolve_stock", route, ["tools", "answer", END])
    graph.add_edge("tools", "resolve_stock")
    graph.add_edge("answer", END)
    return graph


@offline_reply(ANSWER_PROMPT)
def _offline_answer(messages: list[BaseMessage]) -> str:
    text = str(messages[-1].content)
    s = json.loads(text.split("Data:\n", 1)[1])
    direction = "up" if s["pct_chg"] >= 0 else "down"
    return (f"{s['name']} ({s['ts_code']}, {s['industry']}) closed at {s['close']} on "
            f"{s['trade_date']}, {direction} {abs(s['pct_chg']):.2f}% on the day; P/E "
            f"{s['pe']}, market cap {s['market_cap_bn']:.0f} bn CNY.")


def initial_state(data: BaseModel, message: str) -> dict[str, Any]:
    query = message or data.query
    state: dict[str, Any] = {"query": query, "asks": 0}
    if query:
        state["messages"] = [HumanMessage(content=query)]
    return state
