"""The presence heartbeat: ``POST /presence/`` (session, CSRF) from ``presence.js``.

Form fields: ``items``, a JSON list of ``{run_id, interrupt_id, state}`` (state:
viewing, answering or left), at most ``MAX_ITEMS``. Each item the user may see
(``can_decide``) and that is still open is recorded (``hitl.presence``); the answer
says who is on each one now, the others refused by name: a question the user may not see
reads as not found, never as who is on it.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_POST

from hitl.models import AgentInterrupt
from hitl.presence import LEFT, STATES, presence_beat
from hitl.selectors import can_decide

MAX_ITEMS = 50


def _bad(message: str) -> JsonResponse:
    return JsonResponse({"code": "invalid", "detail": message}, status=400)


def _items(raw: str) -> list[dict[str, str]] | None:
    try:
        items = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(items, list) or len(items) > MAX_ITEMS:
        return None
    for item in items:
        if not isinstance(item, dict) or item.get("state") not in STATES or not all(
                isinstance(item.get(k), str) for k in ("run_id", "interrupt_id")):
            return None
        try:
            uuid.UUID(item["run_id"])
        except ValueError:
            return None
    return items


@require_POST
def heartbeat(request: HttpRequest) -> JsonResponse:
    if not request.user.is_authenticated:
        return JsonResponse({"code": "not_authenticated", "detail": "log in first"},
                        status=401)
    items = _items(request.POST.get("items", ""))
    if items is None:
        return _bad(f"items: a JSON list of at most {MAX_ITEMS} "
                    "{run_id, interrupt_id, state} (state: viewing, answering or left)")
    rows = {(str(r.run_id), r.interrupt_id): r for r in AgentInterrupt.objects.select_related(
        "run").filter(run_id__in={i["run_id"] for i in items},
                      interrupt_id__in={i["interrupt_id"] for i in items})}
    out: list[dict[str, Any]] = []
    for item in items:
        row = rows.get((item["run_id"], item["interrupt_id"]))
        answer = {"run_id": item["run_id"], "interrupt_id": item["interrupt_id"]}
        if row is None or not can_decide(request.user, row.run):
            out.append({**answer, "error": "not_found"})
            continue
        state = item["state"] if row.status == AgentInterrupt.Status.PENDING else LEFT
        people = presence_beat(user=request.user, run_id=row.run_id, owner_id=row.run.owner_id,
                               interrupt_id=row.interrupt_id, state=state)
        now = time.time()
        out.append({**answer, "people": [p.as_json(now) for p in people]})
    return JsonResponse({"items": out})
