"""The queue and the decide page show agent text as the chat page does (issue 35, item
20): `code` and **bold** rendered (inline in a queue row and a card's title, as markdown
in "Conversation so far"), HTML escaped, and plain in the breadcrumb."""

from __future__ import annotations

import pytest
from django.test import Client

from hitl.models import AgentInterrupt
from runs.models import Message

pytestmark = pytest.mark.django_db

QUEUE = "/admin/hitl/agentinterrupt/"


def test_markdown_in_rows_titles_and_the_conversation(staff, paused_run):
    row = paused_run(staff["alice"], ["approval"])[0]
    AgentInterrupt.objects.filter(pk=row.pk).update(request={
        "type": "approval", "message": "Ship `v2` to **prod** <i>now</i>?"})
    Message.objects.create(conversation=row.run.conversation, role="assistant",
                           content="I will run `deploy`:\n\n- **prod** first\n- then <b>eu</b>")
    client = Client()
    client.force_login(staff["reviewer"])
    queue = client.get(QUEUE).content.decode()
    assert "Ship <code>v2</code> to <strong>prod</strong> &lt;i&gt;now&lt;/i&gt;?" in queue
    page = client.get(f"{QUEUE}{row.pk}/change/").content.decode()
    assert "Ship <code>v2</code> to <strong>prod</strong>" in page  # the card's title
    assert "&rsaquo; Approval · Ship v2 to prod &lt;i&gt;now&lt;/i&gt;?" in page
    assert "I will run <code>deploy</code>:</p>" in page
    assert "<li><strong>prod</strong> first</li>" in page and "&lt;b&gt;eu&lt;/b&gt;" in page
    assert "`" not in page.split('class="queue-conversation"')[1].split("</ol>")[0]
