"""A conversation's transcript: one block per run (its messages, tool chips, cards,
status and result), and the cache of finished runs' HTML.

A fixed number of queries builds any number of blocks; a finished run's block never
changes, so its HTML is cached, and a history of finished runs is one cached string.
"""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe

from hitl.cards import card_context, readable
from hitl.models import AgentInterrupt
from pages.live import read_runs
from pages.markdown import render_markdown
from pages.tool_chips import chips
from runs.models import AgentRun, Conversation, Message

# Runs whose stored events are read for tool chips and streamed text (the newest ones).
LIVE_RUNS = 5
# A finished run's block never changes (its messages, answers and result are final):
# its HTML is kept in the cache, so a long conversation costs one lookup per old run.
BLOCK_CACHE_SECONDS = 3600


def _answer_url(conversation: Conversation, interrupt_id: str) -> str:
    return reverse("pages:answer", args=[conversation.pk, interrupt_id])


def interrupt_card(conversation: Conversation, interrupt: AgentInterrupt, *, viewer: Any,
                   errors: dict | None = None, values: Any = None) -> dict[str, Any]:
    return card_context(interrupt, action_url=_answer_url(conversation, interrupt.interrupt_id),
                        errors=errors, values=values, htmx=True, viewer=viewer)


def card_interrupts() -> QuerySet[AgentInterrupt]:
    """Interrupts with what their cards read (run, decider, assignees, votes) in 5 queries."""
    return (AgentInterrupt.objects.select_related("run", "decided_by")
            .prefetch_related("assignees", "assigned_groups", "votes"))


def _block_key(run: AgentRun) -> str:
    return f"pages:block:{run.id}:{run.status}:{run.updated_at.timestamp()}"


def run_blocks(conversation: Conversation, runs: list[AgentRun], *,
               viewer: Any, card_errors: dict[str, tuple[dict, Any]] | None = None,
               request: HttpRequest | None = None) -> list[dict[str, Any]]:
    """One block per run: its messages, tool calls, cards, status and result.

    A fixed number of queries whatever the length of the conversation (messages and
    interrupts are each read in one query), plus two Redis reads for the newest runs.
    With ``request``, finished runs come as ready HTML (``block["html"]``) from the cache.
    """
    card_errors = card_errors or {}
    history = runs[:-1]
    if request is not None and history and all(r.status in AgentRun.FINISHED for r in history):
        # The key names the last finished run: a new run moves the history on.
        # Every run but the newest is finished (one unfinished run per thread, the newest):
        # the whole history is one cached string, one lookup however long it is.
        last = history[-1]
        key = (f"pages:blocks:{conversation.pk}:{len(history)}:{last.id}:"
               f"{last.updated_at.timestamp()}")
        html = cache.get(key)
        if html is None:
            blocks = _run_blocks_each(conversation, runs, viewer=viewer,
                                      card_errors=card_errors, request=request)
            if all("html" in b for b in blocks[:-1]):
                cache.set(key, "".join(b["html"] for b in blocks[:-1]), BLOCK_CACHE_SECONDS)
            return blocks
        return [{"run": None, "html": mark_safe(html)}, *_run_blocks_each(  # noqa: S308
            conversation, runs[-1:], viewer=viewer, card_errors=card_errors, request=request)]
    return _run_blocks_each(conversation, runs, viewer=viewer, card_errors=card_errors,
                            request=request)


def _run_blocks_each(conversation: Conversation, runs: list[AgentRun], *, viewer: Any,
                     card_errors: dict[str, tuple[dict, Any]],
                     request: HttpRequest | None) -> list[dict[str, Any]]:
    # ``runs`` ends with the conversation's newest run, never cached: it may be live, and
    # the page's script continues its events from what the page shows.
    latest = runs[-1] if runs else None
    cached: dict[str, str] = {}
    if request is not None:
        # Not the newest run: the page's script continues its events from what it shows.
        cached = cache.get_many([_block_key(r) for r in runs
                                 if r.status in AgentRun.FINISHED and r is not latest])
    todo = [r for r in runs if _block_key(r) not in cached]
    blocks = _build_blocks(conversation, todo, card_errors, viewer) if todo else []
    built = {b["run"].id: b for b in blocks}
    out, fresh = [], {}
    for run in runs:
        key = _block_key(run)
        if key in cached:
            out.append({"run": run, "html": cached[key]})
            continue
        block = built[run.id]
        # (A finished run with a question still pending, e.g. one that failed, has a form
        # with this user's CSRF token: never cached.)
        if request is not None and run.status in AgentRun.FINISHED and run is not latest \
                and not block["pending"]:
            block["html"] = fresh[key] = render_to_string(
                "pages/_run.html", {"block": block, "conversation": conversation}, request)
        out.append(block)
    if fresh:
        cache.set_many(fresh, BLOCK_CACHE_SECONDS)
    return out


def _build_blocks(conversation: Conversation, runs: list[AgentRun],
                  card_errors: dict[str, tuple[dict, Any]], viewer: Any) -> list[dict[str, Any]]:
    run_ids = [r.id for r in runs]
    messages: dict[Any, list[Message]] = {rid: [] for rid in run_ids}
    for message in Message.objects.filter(run_id__in=run_ids).order_by("created_at", "id"):
        messages[message.run_id].append(message)
    interrupts: dict[Any, list[AgentInterrupt]] = {rid: [] for rid in run_ids}
    for item in card_interrupts().filter(run_id__in=run_ids).order_by("created_at", "id"):
        interrupts[item.run_id].append(item)
    live = read_runs(runs[-LIVE_RUNS:])
    # A failed run may be retried while it is the conversation's newest (a later run has
    # moved the thread on): one query, only when a run here failed.
    newest = None
    if any(r.status == AgentRun.Status.FAILED for r in runs):
        newest = (AgentRun.objects.filter(conversation=conversation)
                  .order_by("-created_at", "-id").values_list("id", flat=True).first())
    blocks = []
    for run in runs:
        state = live.get(str(run.id))
        items = []
        for message in messages[run.id]:
            assistant = message.role == Message.Role.ASSISTANT
            text = message.content
            if assistant and state is not None and message.id == run.assistant_message_id:
                text = state.text_over(text)
            items.append({"message": message, "assistant": assistant, "text": text,
                          # While a segment streams, plain text the script appends to.
                          "html": render_markdown(text)
                          if assistant and run.status not in AgentRun.LIVE else None})
        cards = []
        for item in interrupts[run.id]:
            errors, values = card_errors.get(item.interrupt_id, (None, None))
            cards.append(interrupt_card(conversation, item, viewer=viewer, errors=errors,
                               values=values))
        blocks.append({
            "run": run, "messages": items, "cards": cards,
            "pending": sum(1 for c in cards if c["pending"]),
            "answerable": sum(1 for c in cards if c["answerable"]),
            "tools": chips(state.tool_calls, interrupts[run.id]) if state else [],
            "step": state.step if state else "",
            "live": run.status in AgentRun.LIVE,
            "last_event_id": state.last_event_id if state else 0,
            "result": _result(run),
            # Owner or reviewer: whoever sees the page (``_conversation``) may retry.
            "retry_url": reverse("pages:retry", args=[conversation.pk, run.id])
            if run.status == AgentRun.Status.FAILED and run.id == newest else "",
        })
    return blocks


def _result(run: AgentRun) -> Any:
    """A finished run's result to show beside its message (markdown is in the message)."""
    if run.status not in AgentRun.FINISHED or not run.result:
        return None
    result = run.result
    if isinstance(result, dict) and "markdown" in result:
        result = {k: v for k, v in result.items() if k not in ("markdown",)}
    return readable(result)
