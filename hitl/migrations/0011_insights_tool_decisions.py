"""The Insights page's per-tool decisions, kept beside each decided question: a stored
generated column (Postgres computes it on every insert and update; no statement of ours
writes it, and the models do not know it), so the page groups a small ``jsonb`` value
instead of parsing every verbatim request (observability.insights.decisions_per_tool).

``[[tool, ...], [decision, ...]]``, paired by position: a batched request's tools and
its answer's decision types, a per-call approval's tool and decision, ``review`` and
the review's decision. NULL while undecided, for other formats, and for a request whose
text ``jsonb`` cannot hold (a ``\\u0000`` or a surrogate escape: ``json`` keeps them,
``jsonb`` refuses them, and an insert must never fail for a report): the page reads those
few rows the slow way.
"""

from django.db import migrations

SAFE = r"(request::text !~* '\\u(0000|d[89a-f])')"
# jsonb_build_array is only stable; jsonb_set and jsonpath queries are immutable.
PAIRS = "jsonb_set(jsonb_set('[[], []]', '{{0}}', {}), '{{1}}', {})"
EXPRESSION = f"""CASE
    WHEN decision IS NULL OR NOT {SAFE} THEN NULL
    WHEN kind = 'hitl_request' THEN """ + PAIRS.format(
    "jsonb_path_query_array(request::jsonb, '$.action_requests[*].name')",
    "jsonb_path_query_array(decision, '$.decisions[*].type')") + """
    WHEN kind = 'tool_approval' THEN """ + PAIRS.format(
    "jsonb_path_query_array(request::jsonb, '$.name')",
    "jsonb_path_query_array(decision, '$.type')") + """
    WHEN kind = 'review' THEN """ + PAIRS.format(
    "'[\"review\"]'", "jsonb_path_query_array(decision, '$.decision')") + """
END"""


class Migration(migrations.Migration):

    dependencies = [
        ('hitl', '0010_run_webhook'),
    ]

    operations = [
        migrations.RunSQL(
            f"ALTER TABLE hitl_agentinterrupt ADD COLUMN insights_tool_decisions jsonb "
            f"GENERATED ALWAYS AS ({EXPRESSION}) STORED",
            "ALTER TABLE hitl_agentinterrupt DROP COLUMN insights_tool_decisions"),
        # The rows it could not hold, found without a scan (none, nearly always).
        migrations.RunSQL(
            "CREATE INDEX insights_tool_decisions_unread ON hitl_agentinterrupt (created_at) "
            "WHERE insights_tool_decisions IS NULL AND decision IS NOT NULL "
            "AND kind IN ('hitl_request', 'tool_approval', 'review')",
            "DROP INDEX insights_tool_decisions_unread"),
        # The formats seen (the page's filter), read by a loose index scan: a few probes,
        # not a pass over every question (observability.insights.choices).
        migrations.RunSQL("CREATE INDEX insights_interrupt_kinds ON hitl_agentinterrupt (kind)",
                          "DROP INDEX insights_interrupt_kinds"),
    ]
