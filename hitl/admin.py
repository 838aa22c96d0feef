from django.contrib import admin

from hitl.models import AgentInterrupt
from runs.admin import ReadOnlyAdmin


@admin.register(AgentInterrupt)
class AgentInterruptAdmin(ReadOnlyAdmin):
    list_display = ["interrupt_id", "kind", "status", "run", "decided_by", "decided_at",
                    "created_at"]
    list_filter = ["status", "kind"]
    search_fields = ["interrupt_id", "run__id"]
