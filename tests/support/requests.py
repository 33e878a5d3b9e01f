"""Running a write the way a person's request would while a turn is in flight."""

import threading

from django.db import connection


def as_another_request(fn) -> None:
    """Run `fn` on another thread with its own database connection (as a
    person's HTMX request would be), wait for it, and raise what it raised."""
    errors = []

    def run():
        try:
            fn()
        except Exception as exc:  # pragma: no cover - surfaced below
            errors.append(exc)
        finally:
            connection.close()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if errors:
        raise errors[0]
