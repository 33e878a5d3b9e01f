"""The browser tests' servers are forked from a warm process
(tests/support/forked_python.py, docs/adr/0082): a forked command must start
with the handling of a closed socket that `python` itself starts with, or
the tests run a server that behaves differently from the one people run."""

import os
import subprocess
import sys
from pathlib import Path

from tests.support.forked_python import Forker

PROBE = """\
import signal
for name in ("SIGPIPE", "SIGTERM"):
    handler = signal.getsignal(getattr(signal, name))
    print(name, getattr(handler, "name", handler))
"""


def test_a_forked_command_handles_signals_as_a_fresh_python(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    fresh = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout

    forker = Forker()
    try:
        log = tmp_path / "forked.log"
        process = forker.spawn([str(script)], env=dict(os.environ), cwd=tmp_path, log_path=log)
        assert process.wait(60) == 0
    finally:
        forker.close()
    # SIGPIPE ignored: a write to a socket whose peer has gone is an EPIPE
    # the server handles, not its end. (SIGINT is left at the default on
    # purpose: the forker may have inherited it ignored, and the server's
    # reactor installs its own handler as it starts.)
    assert log.read_text() == fresh
    assert "SIGPIPE SIG_IGN" in fresh


REACTOR_PROBE = """\
import sys
from pathlib import Path
print("reactor installed:", "twisted.internet.reactor" in sys.modules)
"""


def test_a_forked_command_starts_with_no_twisted_reactor_installed(tmp_path):
    """Twisted is preloaded, its reactor not: daphne installs its asyncio
    reactor as the server starts, as it does in `./dev serve`."""
    assert _forked_output(tmp_path, REACTOR_PROBE) == "reactor installed: False\n"


def _forked_output(tmp_path, probe: str) -> str:
    """What `probe`, run as a script by a fresh forker's child, printed."""
    script = tmp_path / "probe.py"
    script.write_text(probe)
    forker = Forker()
    try:
        log = tmp_path / "forked.log"
        assert forker.spawn([str(script)], env=dict(os.environ), cwd=tmp_path, log_path=log).wait(60) == 0
    finally:
        forker.close()
    return log.read_text()


FROZEN_PROBE = """\
import gc
print(gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_a_forked_commands_garbage_collections_leave_the_preloaded_libraries_alone(tmp_path):
    """The objects the forker's imports made are frozen before it forks
    (gc.freeze): a child's collections walk only what the child made, and
    never touch (and so copy) the pages it shares with the forker, which
    cost a server's start about a quarter of its CPU (docs/adr/0082)."""
    frozen, collected = map(int, _forked_output(tmp_path, FROZEN_PROBE).split())
    # Some 280 000 objects frozen, the child's own a few thousand.
    assert frozen > 10 * collected, (frozen, collected)


IMPORTER = """\
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import compiled_once
print(compiled_once.__cached__)
"""


def test_a_module_a_forked_command_compiled_is_read_by_the_next_without_writing_next_to_the_sources(tmp_path, monkeypatch):
    """With PYTHONDONTWRITEBYTECODE (this machine's environment, the
    Dockerfile's) every server start compiled the project's modules from
    source again; the children keep them in a directory of their own,
    outside the checkout, and the next child reads them from there."""
    import importlib.util

    from tests.support.forked_python import PYCACHE_PREFIX

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "compiled_once.py").write_text("VALUE = 1\n")
    script = tmp_path / "importer.py"
    script.write_text(IMPORTER)
    forker = Forker()
    try:
        logs = [tmp_path / "first.log", tmp_path / "second.log"]
        for log in logs:
            assert forker.spawn([str(script), str(sources)], env=dict(os.environ), cwd=tmp_path, log_path=log).wait(60) == 0
    finally:
        forker.close()
    monkeypatch.setattr("sys.pycache_prefix", str(PYCACHE_PREFIX))
    cached = Path(importlib.util.cache_from_source(str(sources / "compiled_once.py")))
    try:
        assert cached.is_file()
        assert [log.read_text().strip() for log in logs] == [str(cached), str(cached)]
        assert not (sources / "__pycache__").exists()
    finally:
        cached.unlink(missing_ok=True)


def test_a_forked_dash_c_command_runs_as_python_dash_c_does(tmp_path):
    """`Forker.run(["-c", code])`: the code sees the argv and the module path
    `python -c` gives it (the working directory first), its outputs and exit
    status come back as subprocess.run's do."""
    (tmp_path / "nearby.py").write_text("WHERE = 'the working directory'\n")
    code = "import sys, nearby; print(sys.argv, repr(sys.path[0]), nearby.WHERE); sys.exit(3)"
    fresh = subprocess.run([sys.executable, "-c", code, "x"], cwd=tmp_path, capture_output=True, text=True)
    forker = Forker()
    try:
        forked = forker.run(["-c", code, "x"], env=dict(os.environ), cwd=tmp_path)
    finally:
        forker.close()
    assert (
        (forked.returncode, forked.stdout, forked.stderr)
        == (fresh.returncode, fresh.stdout, fresh.stderr)
        == (
            3,
            "['-c', 'x'] '' the working directory\n",
            "",
        )
    )
