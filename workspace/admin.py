from django.contrib import admin

from workspace.models import Document, Ticket


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "updated_at"]
    search_fields = ["name", "owner__username"]


@admin.register(Ticket)
class TicketAdmin(admin.ModelAdmin):
    list_display = ["title", "priority", "thread_id", "created_at"]
    list_filter = ["priority"]
