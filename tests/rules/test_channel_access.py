"""Who may read which event channel (streams.channels), and what the check costs: a stream
open pays it once (10,000 opens through Pushpin are mostly this), an owner's in one query."""

from __future__ import annotations

import uuid

from django.contrib.auth.models import AnonymousUser

from runs.services import run_start
from streams.channels import ChannelManager, checked, may_read, user_stream_channel
from streams.keys import REVIEWERS_CHANNEL, run_channel, user_channel


def _fresh(user):
    # A new request's user: no permission cache from an earlier check.
    return type(user).objects.get(pk=user.pk)


def test_each_role_on_each_channel(people, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks():
        run = run_start(owner=people["owner"], agent="dev", input={"topic": "t"})
    channel = run_channel(run.pk)
    owner, reviewer, outsider = people["owner"], people["reviewer"], people["outsider"]
    assert may_read(owner, channel) and may_read(reviewer, channel)
    assert not may_read(outsider, channel) and not may_read(AnonymousUser(), channel)
    assert not may_read(None, channel)
    assert not may_read(reviewer, run_channel(uuid.uuid4()))  # no such run
    assert not may_read(owner, "run-not-a-uuid")
    assert may_read(reviewer, REVIEWERS_CHANNEL) and not may_read(owner, REVIEWERS_CHANNEL)
    assert may_read(owner, user_channel(owner.pk))
    assert not may_read(outsider, user_channel(owner.pk))
    assert user_stream_channel(reviewer) == REVIEWERS_CHANNEL
    assert user_stream_channel(owner) == user_channel(owner.pk)
    owner.is_active = reviewer.is_active = False  # deactivated: nothing, own runs included
    assert not may_read(owner, channel) and not may_read(owner, user_channel(owner.pk))
    assert not may_read(reviewer, channel) and not may_read(reviewer, REVIEWERS_CHANNEL)


def test_an_owner_is_one_query_and_a_checked_open_is_not_checked_again(
        people, django_capture_on_commit_callbacks, django_assert_num_queries) -> None:
    with django_capture_on_commit_callbacks():
        run = run_start(owner=people["owner"], agent="dev", input={"topic": "t"})
    channel = run_channel(run.pk)
    owner, reviewer = _fresh(people["owner"]), _fresh(people["reviewer"])
    manager = ChannelManager()
    with django_assert_num_queries(1):  # the run's owner: no permission lookup
        assert may_read(owner, channel)
    with django_assert_num_queries(0), checked(owner, channel):
        assert manager.can_read_channel(owner, channel)
    # Only that user and that channel count as checked.
    outsider = _fresh(people["outsider"])
    with checked(owner, channel):
        assert not manager.can_read_channel(outsider, channel)
        assert manager.can_read_channel(reviewer, channel)
        assert not manager.can_read_channel(owner, REVIEWERS_CHANNEL)
        assert not manager.can_read_channel(AnonymousUser(), channel)
    assert manager.can_read_channel(owner, channel)  # outside: checked for real
    assert not manager.can_read_channel(outsider, channel)
