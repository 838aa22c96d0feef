"""The admin's Insights page (``/admin/insights/``): time to decision, decisions per
tool, deadlines, the backlog and model usage over a date range, for reviewers and
superusers (other staff: 403; everyone else: the admin's login). Every table has a CSV
export (``?export=<table>`` with the same filters); the charts are SVG made here."""

from __future__ import annotations

import csv
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from hitl.selectors import is_reviewer
from observability import charts, insights
from observability.shared_snapshot import report_transaction

DEFAULT_DAYS = 30
MAX_DAYS = 366


class InsightsFilters(forms.Form):
    start = forms.DateField(required=False, label="From",
                            widget=forms.DateInput(attrs={"type": "date"}))
    end = forms.DateField(required=False, label="To",
                          widget=forms.DateInput(attrs={"type": "date"}))
    agent = forms.ChoiceField(required=False)
    format = forms.ChoiceField(required=False)
    group = forms.ChoiceField(required=False, label="Assignee group")

    def __init__(self, *args: Any, options: dict[str, list[str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, values in options.items():
            self.fields[name].choices = [("", "all"), *((v, v) for v in values)]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        today = timezone.localdate()
        end = data.get("end") or today
        start = data.get("start") or end - timedelta(days=DEFAULT_DAYS - 1)
        if start > end:
            raise forms.ValidationError("“From” must not be after “To”.")
        if (end - start).days >= MAX_DAYS:
            raise forms.ValidationError(f"Choose at most {MAX_DAYS} days.")
        data["start"], data["end"] = start, end
        return data

    def filters(self) -> insights.Filters:
        d = self.cleaned_data
        return insights.Filters(start=d["start"], end=d["end"], agent=d.get("agent") or "",
                                format=d.get("format") or "", group=d.get("group") or "")


# CSV exports: table name → its columns.
COLUMNS = {
    "time_by_agent": ["name", "decided", "p50", "p90"],
    "time_by_format": ["name", "decided", "p50", "p90"],
    "time_by_reviewer": ["name", "decided", "p50", "p90"],
    "decisions_per_tool": ["tool", "total", *insights.DECISION_TYPES,
                           *(f"{t}_rate" for t in insights.DECISION_TYPES)],
    "deadlines": ["raised", "overdue", "escalated", "expired"],
    "backlog": ["day", "waiting"],
    "usage_by_agent": ["name", "calls", "input", "output", "total", "cost"],
    "usage_by_model": ["name", "calls", "input", "output", "total", "cost"],
}


# Each table's figures, from one query (the two time and usage queries give three and
# two tables: an export of one of them runs its query alone).
QUERIES: dict[str, Any] = {
    "time_by_agent": lambda f: insights.time_to_decision(f)["agent"],
    "time_by_format": lambda f: insights.time_to_decision(f)["format"],
    "time_by_reviewer": lambda f: insights.time_to_decision(f)["reviewer"],
    "decisions_per_tool": insights.decisions_per_tool,
    "deadlines": lambda f: [insights.deadlines(f)],
    "backlog": insights.backlog,
    "usage_by_agent": lambda f: insights.usage(f)["agent"],
    "usage_by_model": lambda f: insights.usage(f)["model"],
}
# Sorts of a hundred thousand waits in memory, not on disk (Postgres's default: 4 MB).
WORK_MEM = "32MB"


def figures(filters: insights.Filters, only: str | None = None) -> dict[str, Any]:
    """Every table's rows (or ``only`` that one's), read on one snapshot: the
    time-to-decision query on a second connection while this one runs the others."""
    settings = f"SET LOCAL work_mem = '{WORK_MEM}'"  # a constant
    if only is not None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(settings)
            return {only: QUERIES[only](filters)}
    with report_transaction(settings=settings) as beside:
        timing = beside(insights.time_to_decision, filters)
        used = insights.usage(filters)
        counted = insights.by_day(filters)
        data = {
            "decisions_per_tool": insights.decisions_per_tool(filters),
            "deadlines": [insights.deadlines(filters, counted)],
            "backlog": insights.backlog(filters, counted),
            "usage_by_agent": used["agent"], "usage_by_model": used["model"],
        }
        times = timing.result()
    return {"time_by_agent": times["agent"], "time_by_format": times["format"],
            "time_by_reviewer": times["reviewer"], **data}


def insights_view(request: HttpRequest) -> HttpResponse:
    if not is_reviewer(request.user):
        raise PermissionDenied
    form = InsightsFilters(request.GET, options=insights.choices())
    context = {**admin.site.each_context(request), "title": "Insights", "form": form,
               "tz": timezone.get_current_timezone_name()}
    if not form.is_valid():
        return TemplateResponse(request, "admin/insights.html", context, status=400)
    export = request.GET.get("export")
    if export is not None and export not in COLUMNS:
        context["export_error"] = f"Unknown table {export!r}: one of {', '.join(COLUMNS)}."
        return TemplateResponse(request, "admin/insights.html", context, status=400)
    if export:
        return _csv(export, figures(form.filters(), only=export)[export])
    data = figures(form.filters())
    query = request.GET.copy()
    query.pop("export", None)
    context.update(data)
    context.update({
        "filters": form.filters(), "query": query.urlencode(),
        "backlog_chart": charts.line_chart(
            [(row["day"].isoformat(), float(row["waiting"])) for row in data["backlog"]],
            title="Interrupts waiting at the end of each day"),
        "time_chart": charts.bar_chart(data["time_by_agent"], keys=("p50", "p90"),
                                       title="Time to decision per agent (seconds)"),
    })
    return TemplateResponse(request, "admin/insights.html", context)


def _csv(name: str, rows: list[dict[str, Any]]) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="insights-{name}.csv"'
    writer = csv.DictWriter(response, fieldnames=COLUMNS[name], extrasaction="ignore")
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    return response


def _cell(value: Any) -> Any:
    # A name from a graph or a user that a spreadsheet would run as a formula, quoted.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value
