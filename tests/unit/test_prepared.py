"""The hot path's statements prepared per connection (agentsite.prepared)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agentsite import prepared
from agentsite.compiled import Compiled, insert, save_fields, together
from runs.models import Conversation

pytestmark = pytest.mark.django_db(transaction=True)

BY_NAME = Compiled(lambda username: get_user_model().objects.filter(username=username),
                   username=str)


def _on_session() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM pg_prepared_statements")
        return {row[0] for row in cursor.fetchall()}


def _sent(queries: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in queries.captured_queries]


def test_a_statement_is_prepared_outside_transactions_and_executed_by_name():
    user = get_user_model().objects.create_user("prep-a", email="a@example.com")
    connection.close()  # a connection handed out again, as after a request
    with CaptureQueriesContext(connection) as queries:
        found = BY_NAME.first(username="prep-a")
        again = BY_NAME.first(username="prep-a")
    assert found == again == user and found.email == "a@example.com"
    # The first run named it; a connection in autocommit prepares what it lacks first.
    sent = _sent(queries)
    assert all(sql.startswith("EXECUTE agentsite_") for sql in sent), sent
    assert "'prep-a'" in sent[0]
    assert {name for name, *_ in prepared._named.values()} & _on_session()
    assert BY_NAME.first(username="nobody") is None


def test_inside_a_transaction_a_connection_without_it_sends_plain_sql():
    get_user_model().objects.create_user("prep-b")
    fresh = Compiled(lambda username: get_user_model().objects.filter(
        username=username, is_active=True), username=str)
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        (rows,) = together((fresh, {"username": "prep-b"}))
    assert [u.username for u in rows] == ["prep-b"]
    assert not any(sql.startswith(("EXECUTE", "PREPARE")) for sql in _sent(queries))
    # Handed out again (the pool), the connection prepares it: the next run is by name.
    connection.close()
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        (rows,) = together((fresh, {"username": "prep-b"}))
    assert [u.username for u in rows] == ["prep-b"]
    assert _sent(queries)[0].startswith("EXECUTE agentsite_")


def test_writes_go_by_name_and_keep_their_checks():
    user = get_user_model().objects.create_user("prep-c")
    first = Conversation(owner=user, agent="dev", title="it's 100%")
    with transaction.atomic():  # named here, sent as plain SQL
        insert([first])
        save_fields(user, ["email"])
    connection.close()
    second = Conversation(owner=user, agent="dev", title="second")
    user.email = "c@example.com"
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        insert([second])
        save_fields(user, ["email"])
    assert all(sql.startswith("EXECUTE agentsite_") for sql in _sent(queries)), _sent(queries)
    assert Conversation.objects.get(pk=first.pk).title == "it's 100%"
    assert Conversation.objects.get(pk=second.pk).title == "second"
    assert get_user_model().objects.get(pk=user.pk).email == "c@example.com"
    user.pk = 10**9  # no such row: the check still fails the save
    with pytest.raises(Exception, match="did not affect any rows"), transaction.atomic():
        save_fields(user, ["email"])


def test_a_statement_postgres_cannot_type_is_not_prepared_and_harms_nothing():
    sql = "SELECT %s IS NULL"
    prepared.statement(connection, sql)  # named
    connection.close()
    with transaction.atomic():  # the connection is handed out, the PREPARE refused
        with connection.cursor() as cursor:
            cursor.execute(prepared.statement(connection, sql), [None])
            assert cursor.fetchone() == (True,)
        get_user_model().objects.create_user("prep-d")
    assert get_user_model().objects.filter(username="prep-d").exists()
    assert prepared._named[sql][0] in prepared._refused


def test_off_everything_goes_as_plain_sql(settings):
    settings.AGENTSITE_DB_PREPARED = False
    get_user_model().objects.create_user("prep-e")
    connection.close()
    off = Compiled(lambda username: get_user_model().objects.filter(
        username=username, is_staff=False), username=str)
    with CaptureQueriesContext(connection) as queries:
        assert off.first(username="prep-e").username == "prep-e"
        assert BY_NAME.first(username="prep-e").username == "prep-e"
    assert not any(sql.startswith(("EXECUTE", "PREPARE")) for sql in _sent(queries))
