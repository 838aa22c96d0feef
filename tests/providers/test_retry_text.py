"""Issue 35 item 16: a model call cut mid-stream is retried; what listeners saw of the
cut-off attempt is replaced, not repeated ("Thanks. The tool said:Thanks. The tool").

Listeners are the official client's rules: TEXT_MESSAGE_CONTENT appends to the message,
MESSAGES_SNAPSHOT replaces the messages. The page applies them the same way
(tests/pages/test_browser_retry_live.py)."""

from __future__ import annotations

from typing import Any

from runs.models import Message
from tests.helpers import FINAL, published_events, start_run, wait_run


def shown_before_end(events: list[dict[str, Any]], message_id: str) -> str:
    """The message's text as a listener holds it just before the segment's end (its last
    MESSAGES_SNAPSHOT, which restates everything anyway)."""
    last = max(i for i, e in enumerate(events) if e["type"] == "MESSAGES_SNAPSHOT")
    text = ""
    for event in events[:last]:
        if event["type"] == "TEXT_MESSAGE_CONTENT" and event["messageId"] == message_id:
            text += event["delta"]
        elif event["type"] == "MESSAGES_SNAPSHOT":
            text = next(m["content"] for m in event["messages"] if m["id"] == message_id)
    return text


def test_a_cut_stream_retried_replaces_its_partial_text(papi, provider):
    owner = papi("owner")
    provider.fault("cut", after_chunks=4)  # a few words, then the connection drops
    run = start_run(owner, "assistant", message="What are your opening hours?")
    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", (done["error"], done["error_detail"])
    assert [r.answer for r in provider.requests()] == ["cut", "ok"]
    stored = Message.objects.get(pk=done["assistant_message_id"]).content
    assert stored == provider.requests()[-1].reply["text"]
    events = published_events(run["id"])
    cut_off = "".join(e["delta"] for e in events[:[e["type"] for e in events].index("CUSTOM")]
                      if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert cut_off and stored.startswith(cut_off) and cut_off != stored, (cut_off, stored)
    assert shown_before_end(events, done["assistant_message_id"]) == stored
