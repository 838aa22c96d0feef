"""Valid history, always: every AI tool call in a thread's state has its ToolMessage.

A run that ends while a model's tool calls are unanswered (cancelled or expired while a
tool asked a question, failed in the tools node, rejected or blocked before they ran)
leaves the thread's checkpoint with an AI message whose calls have no ToolMessage. A
provider that checks histories (OpenAI: "tool_calls must be followed by tool messages")
then refuses every later run of the conversation. ``repair`` answers each such call with
a ToolMessage saying that it did not run and why ("Not run: the run was cancelled by
alice."), written through LangGraph's public ``update_state``.

It runs in the worker only, when no segment of the thread is live, under the thread's
advisory lock (``thread_lock``):
- at the start of a run's first segment, before the model is called
  (``repair_at_start``): also covers a lost repair task, and any thread an earlier run
  left unrepaired;
- in the task ``execution.history_repair`` (``repair_ended``), which ``repair_on_commit``
  enqueues when a run ends early: the thread is valid at once, for a reader of its state
  or an adopter continuing it with their own code.
A segment that goes on with an ended run's thread (a failed run retried) waits for a
repair in progress (``wait_for_repair``).

This module is safe to import in a web process (the web's cancel enqueues the task, by
name): LangGraph's graph modules are imported inside the worker-side functions.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from celery import current_app as celery_app
from django.db import connection, transaction
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from runs.models import AgentRun, AuditLog

log = logging.getLogger(__name__)

REPAIR_TASK = "execution.history_repair"
# The checkpoint metadata of a repair's checkpoint (the reason it wrote): a person reading
# the thread's history, or a retry, can tell it from the graph's own steps.
REPAIR_KEY = "agentsite_history_repair"
CHANNEL = "messages"
# Runs that end like this may leave tool calls unanswered (a completed run too, when its
# graph stops on a turn limit, but its next run's start repairs that).
EARLY_ENDS = (AgentRun.Status.CANCELLED, AgentRun.Status.FAILED, AgentRun.Status.EXPIRED,
              AgentRun.Status.REJECTED, AgentRun.Status.BLOCKED)


# --- the web's side: enqueue on commit -----------------------------------------------------

def repair_on_commit(run: AgentRun) -> None:
    """Inside the transaction that ends ``run``: repair its thread once that commits.

    Best effort: a lost task only delays the repair to the thread's next run, so the send
    is not retried (a request that ended a run does not wait out a broker outage twice)."""
    run_id = str(run.id)

    def send() -> None:
        try:
            celery_app.send_task(REPAIR_TASK, args=(run_id,), retry=False)
        except Exception as exc:  # any broker failure: the next run's start repairs
            log.warning("run %s: history repair not sent: %s", run_id, exc)

    transaction.on_commit(send, robust=True)


# --- why a call did not run ------------------------------------------------------------

def reason_for(run: AgentRun | None) -> str:
    """The ToolMessage's text for a call that ``run`` left unanswered."""
    if run is None:
        return "Not run: the run ended before this call ran."
    status = run.status
    if status == AgentRun.Status.CANCELLED:
        who = _canceller(run)
        return f"Not run: the run was cancelled by {who}." if who else \
            "Not run: the run was cancelled."
    return {
        AgentRun.Status.FAILED: "Not run: the run failed.",
        AgentRun.Status.EXPIRED: "Not run: the question expired.",
        AgentRun.Status.REJECTED: "Not run: the run was rejected.",
        AgentRun.Status.BLOCKED: "Not run: the run was blocked.",
    }.get(status, "Not run: the run ended before this call ran.")


def _canceller(run: AgentRun) -> str:
    rows = AuditLog.objects.filter(run=run, to_status=AgentRun.Status.CANCELLED)
    status_row = rows.filter(action=AuditLog.Action.RUN_STATUS).order_by("-id").first()
    if status_row is not None and status_row.actor_label != "system:worker":
        return status_row.actor_label
    # Ended by the graph (HitlCancelled) after a person cancelled its question (their
    # decision row): that person.
    asked = (rows.filter(action__in=(AuditLog.Action.DECISION, AuditLog.Action.INTERRUPT_STATUS))
             .exclude(actor_label="system:worker").order_by("-id").first())
    return asked.actor_label if asked is not None else ""


def _previous_run(thread_id: str, run_id: str) -> AgentRun | None:
    return (AgentRun.objects.filter(thread_id=thread_id, status__in=AgentRun.FINISHED)
            .exclude(pk=run_id).order_by("-created_at").first())


# --- the thread's lock -------------------------------------------------------------------

def lock_key(thread_id: str) -> int:
    digest = hashlib.sha256(f"history {thread_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


@contextmanager
def thread_lock(thread_id: str, *, wait: bool = True) -> Iterator[bool]:
    """Hold the thread's repair lock (yields False when ``wait`` is off and it is taken).

    Session-level on Django's connection, not transaction-level: the repair writes through
    the checkpointer's own pooled connections, and a transaction held open around that
    graph call (a snapshot, row locks) is what the services never do. Released in
    ``finally``: Django's pool keeps the session, lock included, when the connection goes
    back to it."""
    if connection.in_atomic_block:
        raise RuntimeError("history.thread_lock: not inside a transaction")
    key = lock_key(thread_id)
    with connection.cursor() as cursor:
        if wait:
            cursor.execute("SELECT pg_advisory_lock(%s::bigint)", [key])
            held = True
        else:
            cursor.execute("SELECT pg_try_advisory_lock(%s::bigint)", [key])
            held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s::bigint)", [key])


# --- finding the unanswered calls --------------------------------------------------------

def _call_ids(message: AIMessage) -> list[tuple[str, str]]:
    # Invalid tool calls too: OpenAI's converter sends them as tool_calls.
    calls = [*message.tool_calls, *message.invalid_tool_calls]
    return [(c["id"], c.get("name") or "") for c in calls if c.get("id")]


def fixed_messages(messages: Sequence[Any], reason: str
                   ) -> tuple[list[Any], list[ToolMessage], bool]:
    """The messages with a ToolMessage after each AI tool call that has none in the tool
    messages right after it (where a provider looks for it); returns (all messages,
    the ToolMessages added, whether each went at the end of the list)."""
    out: list[Any] = []
    added: list[ToolMessage] = []
    at_end = True
    i = 0
    while i < len(messages):
        message = messages[i]
        out.append(message)
        i += 1
        if not isinstance(message, AIMessage):
            continue
        answered: set[str] = set()
        while i < len(messages) and isinstance(messages[i], ToolMessage):
            answered.add(messages[i].tool_call_id)
            out.append(messages[i])
            i += 1
        for call_id, name in _call_ids(message):
            if call_id in answered:
                continue
            answered.add(call_id)
            note = ToolMessage(content=reason, tool_call_id=call_id, name=name or None,
                               status="error", id=str(uuid.uuid4()))
            out.append(note)
            added.append(note)
            at_end = at_end and i == len(messages)
    return out, added, at_end


def unanswered(messages: Sequence[Any]) -> int:
    """How many AI tool calls have no ToolMessage where a provider looks for it."""
    return len(fixed_messages(messages, "")[1])


# --- the worker's side: write the ToolMessages -------------------------------------------

def repair(graph: Any, thread_id: str, *, reason: str | Callable[[], str]) -> int:
    """Answer the unanswered tool calls of the thread's state; return how many.

    The caller holds ``thread_lock`` and knows no segment of the thread is live.
    Nothing is written when the graph has no ``messages`` channel or every call is
    answered (a second repair writes nothing)."""
    if CHANNEL not in getattr(graph, "channels", {}):
        return 0
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    snapshot = graph.get_state(config)
    messages = (snapshot.values or {}).get(CHANNEL) or []
    if not isinstance(messages, list) or not unanswered(messages):
        return 0
    text = reason() if callable(reason) else reason
    everything, added, at_end = fixed_messages(messages, text)
    if at_end:
        update: list[Any] = added  # the reducer appends them
    elif _replaces_all(graph) and all(isinstance(m, BaseMessage) for m in messages):
        from langchain_core.messages import RemoveMessage
        from langgraph.graph.message import REMOVE_ALL_MESSAGES  # graph code: worker only

        # A call answered nowhere before later messages (a thread that went on unrepaired):
        # its ToolMessage must go right after it, so the list is written anew.
        update = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *everything]
    else:
        log.warning("thread %s: %d tool calls unanswered before later messages, and the "
                    "messages reducer cannot rewrite the list; left as is",
                    thread_id, len(added))
        return 0
    written = {"configurable": {"thread_id": thread_id}, "metadata": {REPAIR_KEY: text}}
    from langgraph.errors import InvalidUpdateError

    for as_node in _writers(graph, snapshot):
        try:
            graph.update_state(written, {CHANNEL: update}, as_node=as_node)
        except InvalidUpdateError as exc:  # e.g. no node to infer for None
            log.info("thread %s: cannot write as %s: %s", thread_id, as_node, exc)
            continue
        if not unanswered(graph.get_state(config).values.get(CHANNEL) or []):
            log.info("thread %s: %d unanswered tool calls answered (as %s): %s",
                     thread_id, len(added), as_node, text)
            return len(added)
    log.warning("thread %s: no node of the graph could answer its tool calls", thread_id)
    return 0


def _writers(graph: Any, snapshot: Any) -> list[str | None]:
    """The nodes to write as, best first. The node of a task left pending (interrupted
    or not run): it was to answer the calls (``tools``) or stopped before they ran (a
    middleware's ``after_model``); writing as it ends that task. Then the node LangGraph
    finds last wrote the state (``None``: a graph that ended)."""
    names: list[str | None] = []
    tasks = sorted(snapshot.tasks or (), key=lambda t: not t.interrupts)
    for task in tasks:
        if task.name in graph.nodes and task.name not in names:
            names.append(task.name)
    names.append(None)
    return names


def _replaces_all(graph: Any) -> bool:
    """The messages reducer understands ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` (as
    LangGraph's ``add_messages`` does): tried on two throwaway messages."""
    from langchain_core.messages import HumanMessage, RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    reducer = getattr(graph.channels[CHANNEL], "operator", None)
    if reducer is None:
        return False
    try:
        result = reducer([HumanMessage("a", id="a")],
                         [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("b", id="b")])
    except Exception:  # noqa: BLE001 - any other reducer: no rewrite
        return False
    return [getattr(m, "id", None) for m in result] == ["b"]


def repair_at_start(graph: Any, *, run_id: str, thread_id: str) -> int:
    """At the start of a run's first segment, before the graph streams: answer what an
    earlier run of the thread left unanswered. Waits for a repair task holding the lock
    (a short write) rather than streaming beside it."""
    if CHANNEL not in getattr(graph, "channels", {}):
        return 0
    # Most starts find nothing to answer: then no lock (two round trips) is needed, as a
    # repair task writes only while no run of the thread is active, and this one is.
    state = graph.get_state({"configurable": {"thread_id": thread_id}}).values or {}
    if not unanswered(state.get(CHANNEL) or []):
        return 0
    with thread_lock(thread_id):
        return repair(graph, thread_id,
                      reason=lambda: reason_for(_previous_run(thread_id, run_id)))


def wait_for_repair(thread_id: str) -> None:
    """Before a segment goes on with a thread whose run had ended (a failed run retried
    from its checkpoint): let a repair in progress finish first, never beside it."""
    with thread_lock(thread_id):
        pass


def repair_ended(run_id: str) -> int:
    """The task's work: repair the thread of a run that ended, unless the thread has an
    active run again (its first segment repairs, under the same lock) or a repair or a
    segment start holds the lock now."""
    from execution import graphs  # graph code: worker only

    run = AgentRun.objects.filter(pk=run_id).first()
    if run is None or not run.is_finished:
        return 0
    with thread_lock(run.thread_id, wait=False) as held:
        if not held:
            return 0
        # Under the lock: a run started after this check starts its segment with
        # ``repair_at_start``, which waits for us.
        if AgentRun.objects.filter(thread_id=run.thread_id,
                                   status__in=AgentRun.ACTIVE).exists():
            return 0
        # The thread's latest ended run left the calls unanswered (not a run started
        # since the check above: it is queued, and its first segment waits for us).
        latest = (AgentRun.objects.filter(thread_id=run.thread_id,
                                          status__in=AgentRun.FINISHED)
                  .order_by("-created_at").first())
        return repair(graphs.compiled(run.agent), run.thread_id,
                      reason=lambda: reason_for(latest))
