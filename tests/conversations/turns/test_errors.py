"""What a person is told when a turn fails: a lost database connection
(a restart, a failover) is said in plain words, whoever raised it."""

import psycopg
from django.db import OperationalError
from langgraph.errors import GraphRecursionError

from conversations.turns.errors import RETRY, safe_error_message

DATABASE = "The database did not answer while the assistant was working." + RETRY


def test_a_connection_the_database_closed_is_said_as_such_from_django_or_the_checkpointer():
    assert safe_error_message(OperationalError("server closed the connection unexpectedly")) == DATABASE
    assert safe_error_message(psycopg.errors.AdminShutdown("terminating connection due to administrator command")) == DATABASE
    try:
        try:
            raise psycopg.OperationalError("consuming input failed: server closed the connection")
        except psycopg.OperationalError as inner:
            raise RuntimeError("the graph gave up") from inner
    except RuntimeError as wrapped:
        assert safe_error_message(wrapped) == DATABASE


def test_other_failures_keep_their_own_message():
    assert "too many steps" in safe_error_message(GraphRecursionError())
    assert safe_error_message(ValueError("boom")) == "Something went wrong while the assistant was working." + RETRY
