""""Answer differently" on the admin run page (issue 39): the timeline links each answered
question to the fork form, which lists what the original did after it, forks into a new
run page, keeps a refused answer's form (400), and refuses a pruned checkpoint (410)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from execution import checkpoint_pruning
from hitl.models import AgentInterrupt
from runs.models import AgentRun
from tests.execution.test_fork import _completed_dev
from tests.helpers import wait_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_answer_differently_from_the_admin_run_page(api, users):
    owner = api("owner")
    original, asked = _completed_dev(owner)
    reviewer = users["reviewer"]
    reviewer.is_staff = True
    reviewer.save(update_fields=["is_staff"])
    admin = Client()
    admin.force_login(reviewer)
    second = AgentInterrupt.objects.get(pk=asked[1]["id"])
    url = reverse("admin:runs_agentrun_fork", args=[original["id"], second.pk])

    page = admin.get(reverse("admin:runs_agentrun_change", args=[original["id"]]))
    assert url in page.content.decode()
    form = admin.get(url)
    assert form.status_code == 200 and b"No tool call ran" in form.content
    refused = admin.post(url, {"value": "purple"})
    assert refused.status_code == 400 and b'id="fork-form"' in refused.content
    assert not AgentRun.objects.filter(forked_from_id=original["id"]).exists()

    done = admin.post(url, {"value": "green"})
    fork = AgentRun.objects.get(forked_from_id=original["id"])
    assert done.status_code == 302 and done.url == reverse("admin:runs_agentrun_change",
                                                           args=[fork.pk])
    assert b'id="forked-from"' in admin.get(done.url).content
    assert b'id="forks"' in admin.get(reverse("admin:runs_agentrun_change",
                                              args=[original["id"]])).content
    wait_run(owner, str(fork.pk), "paused")

    checkpoint_pruning.sweep(older_than=0)
    gone = admin.get(url)
    assert gone.status_code == 410 and b'id="fork-refused"' in gone.content
