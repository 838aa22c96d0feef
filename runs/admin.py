from django.contrib import admin

from runs.models import AgentRun, AuditLog, Conversation, Message


class ReadOnlyAdmin(admin.ModelAdmin):
    """Business truth changes only through services; the admin shows it."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MessageInline(admin.TabularInline):
    model = Message
    fields = ["role", "content", "run", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "agent", "owner", "updated_at"]
    list_filter = ["agent"]
    search_fields = ["id", "title", "owner__username"]
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "conversation", "role", "run", "created_at"]
    list_filter = ["role"]


class AuditInline(admin.TabularInline):
    model = AuditLog
    fields = ["created_at", "actor_label", "action", "interrupt_ref", "from_status", "to_status",
              "payload"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(AgentRun)
class AgentRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "agent", "agent_version", "owner", "status", "segments", "created_at"]
    list_filter = ["status", "agent"]
    search_fields = ["id", "thread_id", "owner__username"]
    inlines = [AuditInline]


@admin.register(AuditLog)
class AuditLogAdmin(ReadOnlyAdmin):
    list_display = ["id", "created_at", "actor_label", "action", "run", "interrupt_ref",
                    "from_status", "to_status"]
    list_filter = ["action"]
    search_fields = ["run__id", "interrupt_ref", "actor_label"]
