"""An AG-UI answer sends what is waiting in one piece (issue 37): a segment's events that
are already stored, or arrive together, go out as one chunk of the streaming response
(one ASGI send), not one send per event. Driven in process on the real Redis: the
segment is published first, then its answer is read chunk by chunk."""

from __future__ import annotations

import asyncio
import json
import uuid
from concurrent.futures import ThreadPoolExecutor

from agui.events import (
    run_finished_success,
    run_started,
    step_finished,
    step_started,
    text_content,
    text_end,
    text_start,
)
from agui.views import Plan, _stream
from streams.publish import publish, redis_client


def test_a_stored_segment_goes_out_in_one_send() -> None:
    run_id = str(uuid.uuid4())
    ids = {"thread_id": "t", "run_id": run_id}
    events = [run_started(**ids), step_started("agent"), text_start("m"),
              *(text_content("m", f"word {i} ") for i in range(8)), text_end("m"),
              step_finished("agent"), run_finished_success(**ids, result={"ok": True})]
    publish(run_id, events)
    redis_client()  # waits until what this thread published is stored

    async def chunks() -> list[str]:
        plan = Plan(run_id=run_id, after=0, client_thread_id="client-t",
                    client_run_id="client-r")
        return [chunk async for chunk in _stream(plan)]

    with ThreadPoolExecutor(1) as pool:  # a loop of its own (browser tests keep one here)
        sent = pool.submit(asyncio.run, chunks()).result()
    # The frame opened at once (agui.framing), then the whole segment: it was one send
    # per event (15).
    assert sent[0] == "data: " and len(sent) == 2, [c[:40] for c in sent]
    body = "".join(sent)
    frames = [json.loads(line[len("data: "):]) for line in body.split("\n\n") if line]
    assert [f["type"] for f in frames] == [str(e.type.value) for e in events]
    assert frames[0]["runId"] == frames[-1]["runId"] == "client-r"
