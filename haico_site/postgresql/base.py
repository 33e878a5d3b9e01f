"""Django's PostgreSQL backend, with a health check that costs no round
trip on a connection that shows no sign of its end (docs/adr/0170).

Django asks a reused connection `SELECT 1` before the first query after
each `close_old_connections`, which runs around every request and every
`database_sync_to_async` call: a round trip on each of a turn's database
steps. It is asked only where its socket says the server may have ended
it (workspace.db.ended_by_server); a connection the server ended meanwhile
has the server's goodbye or the end of the stream waiting there, and is
checked, and replaced, as before."""

from django.db.backends.postgresql.base import DatabaseWrapper as PostgresDatabaseWrapper

from workspace.db import ended_by_server


class DatabaseWrapper(PostgresDatabaseWrapper):
    def close_if_health_check_failed(self):
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and not ended_by_server(self.connection)
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
