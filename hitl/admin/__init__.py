"""The approval queue in Django's admin (autodiscover imports this package).

- ``queue``: the AgentInterrupt changelist (columns, search, permissions), registered;
- ``filters``: its list filters;
- ``actions``: its bulk actions (approve, reject, claim, release, assign);
- ``decide``: the decide page (the change view) and "decide and next".

Every answer goes through ``execution.lifecycle.interrupts_answer(..., surface="admin")``
(the decide page's card through ``hitl.card_answer``), which locks, checks permission and
status, validates and audits; these modules turn forms into calls and errors into messages.
The policy models' admin (standing approvals, webhooks, delivery log) is
``hitl.policy_admin``, registered from here too.
"""

from hitl import policy_admin  # noqa: F401 - registers the policy models' admin
from hitl.admin import queue  # noqa: F401 - registers AgentInterrupt's admin
