"""A killed web process under an open AG-UI answer: the official client (@ag-ui/client
HttpAgent) reports a failure, not a clean finish, through Pushpin and directly.

Pushpin ends its client's response cleanly when the origin dies mid-answer; the answer's
framing (agui/framing.py) leaves a cut answer inside an event, which the client refuses.
The run is one waiting to retry (live, left alone by workers), its segment's events
published here; the client connects to its thread and follows it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from agentsite.processes import crash
from agui.events import run_finished_success, run_started, text_content, text_end, text_start
from runs.models import AgentRun
from streams.publish import publish, wait_published
from tests.agui.test_agui_node import NODE_DIR, _npm_ci
from tests.retry_rows import retrying_run

pytestmark = pytest.mark.django_db(transaction=True)


def _cut(url: str, token: str, thread_id: str, web) -> dict:
    """Connect the official client at ``url``, kill ``web`` once it has the text, and
    return what the client said."""
    client = subprocess.Popen(
        ["node", "agui_cut.mjs"], cwd=NODE_DIR, stdout=subprocess.PIPE, text=True,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": url, "AGENTSITE_TOKEN": token,
             "THREAD_ID": thread_id})
    try:
        lines = []
        for line in client.stdout:
            lines.append(line.strip())
            if line.strip() == "EVENT TEXT_MESSAGE_CONTENT":
                break
        assert "EVENT RUN_STARTED" in lines, lines
        crash(web)
        out, _ = client.communicate(timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    result = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert result, out
    return json.loads(result[0].removeprefix("RESULT "))


def test_a_cut_answer_is_a_failure_through_pushpin_and_directly(edge, live, users):
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    run = retrying_run(users["owner"], in_seconds=600)
    thread = str(run.conversation_id)
    message = "agui-cut"
    publish(run.id, [run_started(thread_id=run.thread_id, run_id=str(run.id)),
                     text_start(message), text_content(message, "half an answer")])
    wait_published()
    web = edge["webs"][0]  # the one Pushpin routes to first
    try:
        for where, url in (("pushpin", edge["base_url"]),
                           ("direct", f"http://127.0.0.1:{edge['web_ports'][0]}")):
            seen = _cut(url, users["owner_token"], thread, web)
            assert seen["types"][:3] == ["RUN_STARTED", "TEXT_MESSAGE_START",
                                         "TEXT_MESSAGE_CONTENT"], (where, seen)
            assert seen["failed"], (where, seen)  # onRunFailed
            assert seen["finished"] == 0 and not seen["runErrors"], (where, seen)
            web.start()
    finally:
        if web.proc is None or web.proc.poll() is not None:
            web.start()
        publish(run.id, [text_end(message),
                         run_finished_success(thread_id=run.thread_id, run_id=str(run.id),
                                              result=None)])
        wait_published()
        AgentRun.objects.filter(pk=run.pk).update(status=AgentRun.Status.COMPLETED)
