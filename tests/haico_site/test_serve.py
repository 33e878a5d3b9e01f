"""haico_site.serve runs daphne on uvloop where uvloop is installed, and on
asyncio's own loop where it is not (requirements.txt installs it only where
it has wheels)."""

import asyncio
import sys

import pytest

from haico_site.serve import use_uvloop


@pytest.fixture
def loop_policy():
    before = asyncio.get_event_loop_policy()
    yield
    asyncio.set_event_loop_policy(before)


def test_uvloop_runs_the_server_where_it_is_installed(loop_policy):
    uvloop = pytest.importorskip("uvloop")
    use_uvloop()
    assert isinstance(asyncio.get_event_loop_policy(), uvloop.EventLoopPolicy)


def test_without_uvloop_asyncio_own_loop_runs_it(loop_policy, monkeypatch):
    asyncio.set_event_loop_policy(None)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # what a missing package gives: ImportError
    use_uvloop()
    assert type(asyncio.get_event_loop_policy()) is asyncio.DefaultEventLoopPolicy
