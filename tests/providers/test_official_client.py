"""The official AG-UI client against a real provider client (tests/node/
agui_provider.test.mjs): the CUSTOM retry notice inside an AG-UI run that then
completes, a stream cut mid-answer whose retry replaces (not repeats) the cut-off text, and
a cancel while the model call hangs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from runs.models import AgentRun, AuditLog
from tests.agui.test_agui_node import NODE_DIR, _npm_ci


def _client(plive, users, case: str) -> subprocess.Popen:
    assert shutil.which("node") and shutil.which("npm"), "node and npm must be on PATH"
    _npm_ci()
    return subprocess.Popen(
        ["node", "--test", "--test-reporter=spec", "agui_provider.test.mjs"], cwd=NODE_DIR,
        env={"PATH": os.environ["PATH"], "AGENTSITE_URL": plive["base_url"],
             "AGENTSITE_TOKEN": users["owner_token"], "AGENTSITE_CASE": case},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _passed(client: subprocess.Popen, timeout: float = 60) -> None:
    try:
        out, err = client.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        client.kill()
        out, err = client.communicate()
    assert client.returncode == 0, f"node tests failed:\n{out}\n{err}"
    assert "fail 0" in out and "pass 1" in out, out


@pytest.mark.django_db(transaction=True)
def test_official_client_sees_the_retry_and_the_end(plive, provider, users):
    provider.fault("429", times=1)
    _passed(_client(plive, users, "blip"))
    [run] = AgentRun.objects.all()
    assert run.status == "completed" and run.retries == 1
    assert AuditLog.objects.filter(run=run, to_status="retrying").count() == 1


@pytest.mark.django_db(transaction=True)
def test_official_client_after_a_cut_stream_holds_the_answer_once(plive, provider, users):
    provider.fault("cut", after_chunks=4)  # a few words, then the connection drops
    _passed(_client(plive, users, "cut"))
    [run] = AgentRun.objects.all()
    assert run.status == "completed" and run.retries == 1
    assert [r.answer for r in provider.requests()] == ["cut", "ok"]


@pytest.mark.django_db(transaction=True)
def test_official_client_cancel_while_the_model_hangs(plive, provider, papi, users):
    provider.fault("stall")
    client = _client(plive, users, "cancel")
    provider.wait_hanging(1, timeout=30)
    [run] = AgentRun.objects.all()
    cancelled_at = time.monotonic()
    assert papi("owner").post(f"/api/runs/{run.id}/cancel/").status_code == 200
    _passed(client)
    print(f"the client's run ended {time.monotonic() - cancelled_at:.2f} s after the cancel")
    # The call never answered (it hangs, or the cancel cut it): the cancel ended the run.
    [call] = provider.requests()
    assert call.answer in ("stall", "stall, client gone"), call.answer
    assert AgentRun.objects.get(pk=run.pk).status == "cancelled"
