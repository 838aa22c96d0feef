"""Reviewer presence and the soft claim: who is looking at an open question now, and who
is answering it (issue 39). A hint on top of the row lock, which still decides.

Kept in Redis with expiry, no new server: one hash per question
(``presence:<run id>:<interrupt id>``, a field per user: name, state, until) and a sorted
set of the questions someone is on (``presence:watched``, by until) for the admin queue's
"not being looked at" filter. A page renews its entry every third of
``PRESENCE_TTL_SECONDS`` (``pages.presence``); an entry not renewed (the tab was killed)
is gone after it. Changes are told on the existing queue channels
(``notify_user_on_commit``: the run owner's ``user-<id>`` and ``reviewers``), exactly the
people who may see the question: nobody else learns who is on it. A heartbeat that
changes nothing is not told, except to push a listener's expiry on before it lapses.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.db.models import Q, QuerySet

from streams.publish import notify_user_on_commit, redis_client

VIEWING, ANSWERING, LEFT = "viewing", "answering", "left"
STATES = (VIEWING, ANSWERING, LEFT)
WATCHED = "presence:watched"


def ttl() -> float:
    return float(settings.PRESENCE_TTL_SECONDS)


def _item(run_id: Any, interrupt_id: str) -> str:
    return f"{run_id}:{interrupt_id}"


def _key(item: str) -> str:
    return f"presence:{item}"


@dataclass(frozen=True)
class Person:
    user_id: int
    name: str
    state: str
    until: float

    def as_json(self, now: float) -> dict[str, Any]:
        return {"user_id": self.user_id, "name": self.name, "state": self.state,
                "expires_in": round(max(0.0, self.until - now), 2)}


def _read(item: str, now: float) -> tuple[dict[str, Person], dict[str, float], list[str]]:
    """(people present, the until each was last told with, fields that lapsed)."""
    people, told, lapsed = {}, {}, []
    for field, raw in redis_client().hgetall(_key(item)).items():
        uid = field.decode() if isinstance(field, bytes) else str(field)
        try:
            entry = json.loads(raw)
            person = Person(user_id=int(uid), name=str(entry["name"]), state=str(entry["state"]),
                            until=float(entry["until"]))
        except (ValueError, KeyError, TypeError):
            lapsed.append(uid)
            continue
        if person.until <= now:
            lapsed.append(uid)
            continue
        people[uid] = person
        told[uid] = float(entry.get("told", 0))
    return people, told, lapsed


def presence_of(run_id: Any, interrupt_id: str) -> list[Person]:
    """Who is on the question now (a read: no change, nothing told)."""
    people, _told, _lapsed = _read(_item(run_id, interrupt_id), time.time())
    return sorted(people.values(), key=lambda p: (p.state != ANSWERING, p.name))


def answering_others(run_id: Any, interrupt_id: str, user: Any) -> list[str]:
    """Names of the others holding a soft claim on the question (answering it now)."""
    return [p.name for p in presence_of(run_id, interrupt_id)
            if p.state == ANSWERING and p.user_id != getattr(user, "pk", None)]


def presence_beat(*, user: Any, run_id: Any, owner_id: Any, interrupt_id: str,
                  state: str) -> list[Person]:
    """Record that ``user`` is viewing / answering the question (or has left it); tell the
    people who may see it when that changes who is on it. The caller checked that ``user``
    may see it. Returns who is on it now."""
    now, span = time.time(), ttl()
    item = _item(run_id, interrupt_id)
    people, told, lapsed = _read(item, now)
    uid = str(user.pk)
    mine = people.get(uid)
    client = redis_client()
    changed = bool(lapsed)
    pipe = client.pipeline()
    if lapsed:
        pipe.hdel(_key(item), *lapsed)
    if state == LEFT:
        if mine is not None:
            people.pop(uid)
            pipe.hdel(_key(item), uid)
            changed = True
    else:
        until = now + span
        # Told again before a listener's copy of the entry lapses (half the TTL left).
        stale = told.get(uid, 0) <= now + span / 2
        changed = changed or mine is None or mine.state != state or stale
        people[uid] = Person(user_id=user.pk, name=user.get_username(), state=state,
                             until=until)
        pipe.hset(_key(item), uid, json.dumps({
            "name": user.get_username(), "state": state, "until": until,
            "told": until if changed else told.get(uid, 0)}))
        pipe.expire(_key(item), int(span * 2) + 1)
    if people:
        pipe.zadd(WATCHED, {item: max(p.until for p in people.values())})
    else:
        pipe.zrem(WATCHED, item)
    pipe.zremrangebyscore(WATCHED, "-inf", now)
    pipe.execute()
    present = sorted(people.values(), key=lambda p: (p.state != ANSWERING, p.name))
    if changed:
        notify_user_on_commit(owner_id, {
            "type": "presence", "run_id": str(run_id), "interrupt_id": interrupt_id,
            "people": [p.as_json(now) for p in present]})
    return present


def watched_items() -> list[tuple[str, str]]:
    """(run id, interrupt id) of the questions someone is on now."""
    found = redis_client().zrangebyscore(WATCHED, time.time(), "+inf")
    items = []
    for raw in found:
        run_id, _, interrupt_id = (raw.decode() if isinstance(raw, bytes) else raw).partition(":")
        if interrupt_id:
            items.append((run_id, interrupt_id))
    return items


class NotLookedAtFilter(admin.SimpleListFilter):
    """The admin queue's "not being looked at": nobody has the question open now."""

    title = "presence"
    parameter_name = "presence"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("none", "Not being looked at"), ("some", "Being looked at")]

    def queryset(self, request: Any, queryset: QuerySet) -> QuerySet:
        if self.value() not in ("none", "some"):
            return queryset
        watched = Q(pk__in=[])
        for run_id, interrupt_id in watched_items():
            watched |= Q(run_id=run_id, interrupt_id=interrupt_id)
        return queryset.exclude(watched) if self.value() == "none" else queryset.filter(watched)
