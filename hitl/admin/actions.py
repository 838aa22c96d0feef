"""The approval queue's bulk actions: approve, reject (with a reason), claim, release and
assign the selected interrupts, each row through its service in its own transaction, with
one message counting what was done and why the rest was skipped."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from agentsite.errors import Conflict, Forbidden, Gone, InvalidInput, NotFound, ServiceError
from execution.lifecycle import interrupts_answer
from hitl.assign import interrupt_assign
from hitl.decide import Answer
from hitl.formats import for_interrupt
from hitl.models import AgentInterrupt
from hitl.selectors import decidable_interrupts

SURFACE = "admin"


def approve_payload(row: AgentInterrupt) -> Any | None:
    """The format's plain "approve" answer (None: its format has none, or this one cannot
    be approved, e.g. a review or a tool call whose config leaves "approve" out)."""
    fmt = for_interrupt(row)
    return fmt.approve_answer() if fmt.bulk_approve else None


def reject_payload(row: AgentInterrupt, reason: str) -> Any | None:
    """The format's plain "reject" answer with ``reason`` (None: it has none)."""
    return for_interrupt(row).reject_answer(reason)


def skip_reason(err: ServiceError) -> str:
    """Why the decision service refused one row of a bulk action, in the reviewer's words."""
    if isinstance(err, NotFound):
        return "not permitted"
    if isinstance(err, Gone):
        return "expired"
    if isinstance(err, Forbidden):
        return {"not_assigned": "assigned to someone else",
                "requester_may_not_decide": "needs a reviewer other than the requester"
                }.get(err.code, err.code)
    if isinstance(err, InvalidInput):
        return "not approvable"
    if isinstance(err, Conflict) and err.code in ("already_decided", "not_pending"):
        return "already decided"
    if isinstance(err, Conflict) and err.code == "run_not_paused":
        return "run no longer paused"
    if isinstance(err, Conflict) and err.code == "version_mismatch":
        return "agent version changed"
    return err.code


def count_noun(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def uuids(values: list[str]) -> list[uuid.UUID]:
    out = []
    for value in values:
        try:
            out.append(uuid.UUID(value))
        except ValueError:
            continue  # a tampered checkbox value selects nothing
    return out


class BulkActions:
    """The queue's actions, mixed into its ModelAdmin (which grants the "decide" permission)."""

    @admin.action(description="Approve selected", permissions=["decide"])
    def approve_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._bulk(request, queryset, approve_payload, "approved")

    @admin.action(description="Reject selected…", permissions=["decide"])
    def reject_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        reason = request.POST.get("reason", "").strip()
        if request.POST.get("post") == "yes" and reason:
            self._bulk(request, queryset, lambda row: reject_payload(row, reason), "rejected")
            return None
        return self._form_page(request, queryset, "reject_selected.html",
                               title="Reject the selected interrupts", reason=reason,
                               error="Give a reason." if request.POST.get("post") == "yes"
                               else "")

    # --- assignment (hitl.assign.interrupt_assign; a reviewer only) ---

    @admin.action(description="Claim selected (assign to me)", permissions=["decide"])
    def claim_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._assign(request, queryset, "claim")

    @admin.action(description="Release selected (unassign me)", permissions=["decide"])
    def release_selected(self, request: HttpRequest, queryset: QuerySet) -> None:
        self._assign(request, queryset, "release")

    @admin.action(description="Assign selected…", permissions=["decide"])
    def assign_selected(self, request: HttpRequest, queryset: QuerySet) -> HttpResponse | None:
        users = [n.strip() for n in request.POST.get("users", "").split(",") if n.strip()]
        groups = [n.strip() for n in request.POST.get("groups", "").split(",") if n.strip()]
        error = ""
        if request.POST.get("post") == "yes":
            if users or groups:
                error = self._assign(request, queryset, "assign", users=users, groups=groups)
                if not error:
                    return None
            else:
                error = "Name at least one user or group."
        return self._form_page(request, queryset, "assign_selected.html",
                               title="Assign the selected interrupts",
                               users=request.POST.get("users", ""),
                               groups=request.POST.get("groups", ""), error=error)

    def _form_page(self, request: HttpRequest, queryset: QuerySet, template: str,
                   **extra: Any) -> TemplateResponse:
        """An action's intermediate page: the selected rows this user may see, the
        selection kept for the post that applies it, and the action's own fields."""
        return TemplateResponse(request, f"admin/hitl/agentinterrupt/{template}", {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
            "select_across": request.POST.get("select_across", "0"),
            "rows": self._selected_visible(request, queryset)[:200],
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
            **extra,
        })

    def _assign(self, request: HttpRequest, queryset: QuerySet, action: str,
                **names: list[str]) -> str:
        """Apply one assignment action to each selected row; an error to show, or ""."""
        done = 0
        skipped: Counter[str] = Counter()
        for row in self._selected_rows(request, queryset):
            try:
                interrupt_assign(actor=request.user, interrupt_pk=row.pk, action=action,
                                 surface=SURFACE, **names)
            except InvalidInput as err:
                return "; ".join(m for msgs in (err.fields or {}).values() for m in msgs) \
                    or err.detail
            except ServiceError as err:
                skipped[skip_reason(err)] += 1
            else:
                done += 1
        verb = {"claim": "claimed", "release": "released", "assign": "assigned"}[action]
        text = f"{count_noun(done, 'interrupt')} {verb}"
        if skipped:
            text += "; skipped: " + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
        self.message_user(request, text + ".",
                          messages.SUCCESS if done and not skipped else messages.WARNING)
        return ""

    def _selected_rows(self, request: HttpRequest, queryset: QuerySet) -> list[AgentInterrupt]:
        # The rows the reviewer ticked, whatever their status now: one decided meanwhile is
        # reported as such rather than silently left out by the changelist's status filter.
        if request.POST.get("select_across") == "1":
            rows = queryset
        else:
            ids = request.POST.getlist(ACTION_CHECKBOX_NAME)
            rows = AgentInterrupt.objects.filter(pk__in=uuids(ids))
        return list(rows.select_related("run", "run__owner").order_by("created_at", "id"))

    def _selected_visible(self, request: HttpRequest,
                          queryset: QuerySet) -> list[AgentInterrupt]:
        """The selected rows this user may see (what an intermediate page lists)."""
        rows = self._selected_rows(request, queryset)
        visible = set(decidable_interrupts(request.user).filter(pk__in=[r.pk for r in rows])
                      .values_list("pk", flat=True))
        return [row for row in rows if row.pk in visible]

    def _bulk(self, request: HttpRequest, queryset: QuerySet,
              payload_for: Callable[[AgentInterrupt], dict[str, Any] | None], verb: str) -> None:
        rows = self._selected_rows(request, queryset)
        visible = set(decidable_interrupts(request.user).filter(pk__in=[r.pk for r in rows])
                      .values_list("pk", flat=True))
        done = 0
        skipped: Counter[str] = Counter()
        for row in rows:
            payload = payload_for(row)
            if row.pk not in visible:
                skipped["not permitted"] += 1
            elif payload is None:
                skipped["not approvable"] += 1
            else:
                try:
                    # Each row is its own transaction inside the service: one refused row
                    # leaves the others decided, and none half done.
                    interrupts_answer(actor=request.user, run_id=row.run_id,
                                      surface=SURFACE, answers=[Answer(
                                          interrupt_id=row.interrupt_id, payload=payload)])
                except ServiceError as err:
                    skipped[skip_reason(err)] += 1
                else:
                    done += 1
        text = f"{count_noun(done, 'interrupt')} {verb}"
        if skipped:
            reasons = ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
            text += f"; {sum(skipped.values())} skipped ({reasons})"
        level = messages.SUCCESS if done and not skipped else messages.WARNING
        self.message_user(request, text + ".", level)
