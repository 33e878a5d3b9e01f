"""A test's start with no outage on record in this process
(conversations.outages keeps them per process, across tests)."""

from conversations import outages


def no_outage_on_record(monkeypatch) -> None:
    """No outage going on and none just over: the failure the test causes
    begins a new outage and logs its line, instead of being taken for a
    straggler of an outage an earlier test of this process ended less than
    `outages.STRAGGLER_SECONDS` ago (which logs nothing)."""
    monkeypatch.setattr(outages, "_outages", {})
    monkeypatch.setattr(outages, "_answered_at", {})
