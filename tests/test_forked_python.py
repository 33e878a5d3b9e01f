"""The browser tests' servers are forked from a warm process
(tests/support/forked_python.py, docs/adr/0082): a forked command must start
with the handling of a closed socket that `python` itself starts with, or
the tests run a server that behaves differently from the one people run."""

import os
import subprocess
import sys

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
