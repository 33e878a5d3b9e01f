"""PostgreSQL away for two minutes (a managed service's failover) while a
long answer streams, in Chromium against the real server, on a cluster of the
test's own. Longer than the turn's own waits for the database: what the
person read is still never taken back (docs/adr/0131). In a file of its own
so that its two minutes run beside the other browser tests, not after the
shorter outages of tests/browser/test_turn_end_across_a_failover.py."""

import pytest

from .long_answer_outage import long_answer_across_an_outage

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.long_wait]


def test_a_long_answer_that_finishes_during_a_two_minute_failover_is_kept_once_the_database_is_back(
    new_page, start_haico_server, model_server, private_postgres
):
    """Away for two minutes (a managed service's failover): longer than the
    turn's own waits, so its end is kept and stored once the database is
    back; the page says so meanwhile, and takes no message until then."""
    long_answer_across_an_outage(new_page, start_haico_server, model_server, private_postgres, away_seconds=130)
