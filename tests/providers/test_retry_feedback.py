"""Issue 35 items 15 and 17: a failure that repeats after a person's retry says so
("failed again (attempt 2)", with the new failure's time) on REST, the chat page and the
admin; a run that recovered (or was retried) keeps no stale ``retry_reason`` /
``retry_at`` / ``error_detail``."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django.test import Client

from runs.models import AgentRun, AuditLog
from tests.accounts import make_superuser
from tests.helpers import FINAL, start_run, wait_run


def when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def words(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def test_a_failure_repeated_after_a_retry_says_failed_again(papi, provider, users):
    owner = papi("owner")
    provider.fault("401", times=2)
    run = start_run(owner, "assistant", message="What are your opening hours?")
    first = wait_run(owner, run["id"], FINAL, timeout=20)
    assert first["status"] == "failed"
    assert (first["manual_retries"], first["attempt"]) == (0, 1)
    assert first["error_detail"] and not first["retry_reason"] and first["retry_at"] is None

    retried = owner.post(f"/api/runs/{run['id']}/retry/")
    assert retried.status_code // 100 == 2, retried.text
    assert (retried.json()["manual_retries"], retried.json()["attempt"]) == (1, 2)
    again = wait_run(owner, run["id"], FINAL, timeout=20)
    assert again["status"] == "failed" and again["error"] == first["error"]
    assert (again["manual_retries"], again["attempt"]) == (1, 2)
    assert when(again["finished_at"]) > when(first["finished_at"])
    # The run left ``retrying``: its reason and due time went with it.
    assert not again["retry_reason"] and again["retry_at"] is None
    audit = AuditLog.objects.get(run_id=run["id"], from_status="failed", to_status="retrying")
    assert audit.payload["attempt"] == 2 and audit.payload["failed"]["attempt"] == 1

    run_row = AgentRun.objects.get(pk=run["id"])
    failed_at = run_row.finished_at.astimezone(UTC).strftime("%H:%M:%S")
    page = Client()
    page.force_login(users["owner"])
    text = words(page.get(f"/c/{run_row.conversation_id}/").content.decode())
    assert f"The run failed again (attempt 2): {again['error']}" in text, text
    assert f"failed again at {failed_at}" in text, text
    staff = Client()
    staff.force_login(make_superuser("root"))
    admin = words(staff.get(f"/admin/runs/agentrun/{run['id']}/change/").content.decode())
    assert f"The run failed again (attempt 2): {again['error']}" in admin, admin
    assert "Failed at " + run_row.finished_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") in admin

    # A third try that works: nothing of the failures is left on the run.
    assert owner.post(f"/api/runs/{run['id']}/retry/").status_code // 100 == 2
    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", done
    assert (done["manual_retries"], done["attempt"]) == (2, 3)
    assert (done["error"], done["error_detail"], done["retry_reason"], done["retry_at"]) == (
        "", "", "", None), done


def test_a_recovered_run_keeps_no_retry_reason_or_detail(papi, provider):
    owner = papi("owner")
    provider.fault("500")
    run = start_run(owner, "assistant", message="What are your opening hours?")
    done = wait_run(owner, run["id"], FINAL, timeout=20)
    assert done["status"] == "completed", done
    assert done["retries"] == 1 and done["manual_retries"] == 0
    assert (done["error_detail"], done["retry_reason"], done["retry_at"]) == ("", "", None), done
    # The audit row keeps why it was retried.
    audit = AuditLog.objects.get(run_id=run["id"], to_status="retrying")
    assert "500" in audit.payload["detail"] and "500" in audit.payload["reason"]
