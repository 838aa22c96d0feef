"""hitl.presence on the real Redis: who is on a question, told to its viewers only when
that changes (counted: one queue notice per change, none for a heartbeat that changes
nothing), and an entry not renewed lapses after PRESENCE_TTL_SECONDS."""

from __future__ import annotations

import time
import uuid

import pytest

from hitl.presence import ANSWERING, LEFT, VIEWING, answering_others, presence_beat, presence_of

pytestmark = pytest.mark.django_db


def test_changes_are_told_once_and_an_unrenewed_entry_lapses(
        django_user_model, django_capture_on_commit_callbacks, settings):
    settings.PRESENCE_TTL_SECONDS = 1.0
    bob = django_user_model.objects.create(username="bob")
    ann = django_user_model.objects.create(username="ann")
    run_id, question = uuid.uuid4(), "q1"

    def beat(user, state):
        with django_capture_on_commit_callbacks(execute=True) as told:
            presence_beat(user=user, run_id=run_id, owner_id=ann.pk, interrupt_id=question,
                          state=state)
        return len(told)

    assert beat(bob, VIEWING) == 1  # arrived: told
    assert beat(bob, VIEWING) == 0  # renewed early: nothing new
    assert beat(ann, VIEWING) == 1
    assert beat(bob, ANSWERING) == 1  # the soft claim
    assert answering_others(run_id, question, ann) == ["bob"]
    assert answering_others(run_id, question, bob) == []  # not over one's own
    time.sleep(0.6)
    assert beat(bob, ANSWERING) == 1  # told again before a listener's copy lapses
    assert beat(bob, LEFT) == 1
    assert [p.name for p in presence_of(run_id, question)] == ["ann"]
    time.sleep(1.1)  # ann's tab was killed: no "left", the entry lapses
    assert presence_of(run_id, question) == []
    assert beat(bob, VIEWING) == 1
