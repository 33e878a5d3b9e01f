"""Writes made while nobody has the thread open."""

from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

from workspace import events


@contextmanager
def nobody_watching() -> Iterator[None]:
    """The writes inside are announced to no subscriber, as if no page had
    the thread open. The live layer (conversations.live.on_changes) renders
    every committed change's patch for the open pages, the document's
    preview among them; for a test that builds a long history to test
    something else (an archive's, a revision store's) that rendering was
    most of its CPU, and it pushes to no page (docs/adr/0096). What a page
    is sent is tested where it is the subject (tests/conversations/test_live*.py)."""
    with mock.patch.object(events, "_subscribers", []):
        yield
