"""Python commands for the tests, started by forking a process that has
already imported the heavy libraries (docs/adr/0082).

A test server (`manage.py runserver`) or a management command spends about
five seconds importing LangChain, LangGraph, the OpenAI client and their
dependencies before it does anything, and the browser tests start a fresh
server for nearly every test. A *forker* process imports those libraries
once, then forks a child per command: the child takes its own environment,
working directory and log file, and runs `manage.py` exactly as `python
manage.py ...` would. Only libraries that read no setting and no
environment at import are loaded before the fork; Django's settings, the
project's apps and the database are all set up in the child, from the
child's environment.

`ForkedProcess` answers what the tests ask of a `subprocess.Popen`
(`pid`, `poll()`, `wait()`, `returncode`); the child leads its own process
group (`os.setsid`), so `os.killpg(pid, ...)` stops it as before.

`Forker.run(argv, env=..., cwd=...)` runs a command to its end as
`subprocess.run(..., capture_output=True, text=True)` would; `argv` may be
`["-c", code]` as for `python -c`. `FORKER` is the test process's own.

Run `python -m tests.support.forked_python` to be a forker: it reads one
JSON request per line on stdin and answers one JSON line on stdout.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# Imported before the fork: the slow imports of a server's start that read
# no Django setting and no environment variable at import. Twisted and
# daphne stay out (daphne installs its reactor's event loop on import), and
# so does every module of the project.
PRELOADED = (
    "openai",
    "langsmith",
    "langchain_core.language_models.chat_models",
    "langchain_core.runnables",
    "langchain_openai",
    "langchain.agents",
    "langchain.agents.middleware",
    "langgraph.graph",
    "langgraph.checkpoint.sqlite.aio",
    "langgraph.checkpoint.postgres.aio",
    "psycopg",
    "psycopg_pool",
    "redis.asyncio",
    "httpx",
    "pydantic",
    "mcp_types",
    "mcp.server",
    "mcp.server.streamable_http_manager",
    "mcp.shared.exceptions",
    "django.db.models",
    "django.forms",
    "django.template",
    "django.http",
    "django.urls",
    "twisted.internet.asyncioreactor",
    "twisted.internet.endpoints",
    "twisted.logger",
    "twisted.web.http",
    "autobahn.twisted.websocket",
    "daphne.http_protocol",
    "daphne.ws_protocol",
)

BASE_DIR = Path(__file__).resolve().parents[2]


# --- the forker (its own process) ------------------------------------------------


def _run_command(request: dict) -> None:
    """In the child: become `python <argv...>` with the request's environment,
    working directory and log; never returns."""
    code = 1
    try:
        os.setsid()
        # Default handlers, whatever the forker had: a forker started by a
        # non-interactive shell (CI under nohup, `cmd &`) inherits SIGINT as
        # ignored, and a server must stop on SIGINT as it does on Ctrl-C.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        # ... and SIGPIPE ignored, as `python` itself starts: a write to a
        # socket whose peer has gone is then an error the server handles
        # (EPIPE), not the end of the process.
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, request["log"]), (2, request.get("errors") or request["log"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644), fd)
        os.closerange(3, 1024)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        script = request["argv"][0]
        import runpy

        try:
            if script == "-c":
                # `python -c CODE`: the working directory first on the path.
                sys.argv = ["-c", *request["argv"][2:]]
                sys.path[0] = ""
                exec(compile(request["argv"][1], "<string>", "exec"), {"__name__": "__main__"})
            else:
                sys.argv = list(request["argv"])
                sys.path[0] = str(Path(script).resolve().parent)
                runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _exit_status(status: int) -> int:
    """What `Popen.returncode` says: the exit code, or -N for signal N."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


# Where the children keep the modules they compile when the environment
# says not to write bytecode next to the sources (PYTHONDONTWRITEBYTECODE):
# a directory of the machine's own, outside every checkout.
PYCACHE_PREFIX = Path(tempfile.gettempdir()) / f"haico-forked-pycache-{os.getuid()}"


def serve() -> None:
    for module in PRELOADED:
        importlib.import_module(module)
    if threading.active_count() != 1:
        # A fork copies only the calling thread: a library that started one
        # at import would leave its children half made.
        raise SystemExit(f"forked_python: an import started a thread ({threading.enumerate()}); not forking")
    if "twisted.internet.reactor" in sys.modules:
        # daphne installs its asyncio reactor when the server starts; one
        # installed before it would be another reactor than `./dev serve`'s.
        raise SystemExit("forked_python: an import installed Twisted's reactor; not forking")
    if sys.dont_write_bytecode and sys.pycache_prefix is None:
        # Without a bytecode cache every child compiled the project's modules
        # (and the libraries not preloaded) from source again: about 0.2 s of
        # CPU a server start (docs/adr/0082). Set after the preloading, whose
        # modules are compiled already next to their sources.
        sys.pycache_prefix = str(PYCACHE_PREFIX)
        sys.dont_write_bytecode = False
    # The preloaded libraries' objects are set aside from the garbage
    # collector (gc.freeze): a child's collections never walk them. Each
    # walk touched every one of those objects, which after a fork copies the
    # page each lives on, and a server's start runs several full collections
    # (Django's lazy strings make classes): 0.58 s of CPU a start before,
    # 0.42 s after (docs/adr/0082). They stay alive in the forker anyway;
    # what a child makes is collected as in any Python.
    gc.freeze()
    answer = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "spawn":
            pid = os.fork()
            if pid == 0:
                _run_command(request)
            reply = {"pid": pid}
        else:  # "poll": the child's exit status once it ended, else null
            done, status = os.waitpid(request["pid"], os.WNOHANG)
            reply = {"returncode": _exit_status(status) if done else None}
        answer.write(json.dumps(reply) + "\n")
        answer.flush()


# --- the tests' side --------------------------------------------------------------


class Forker:
    """One forker process, started on first use; its requests are serialised."""

    def __init__(self):
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _ask(self, request: dict) -> dict:
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "tests.support.forked_python"],
                    cwd=BASE_DIR,
                    # The libraries read no environment at import, but their
                    # caches must not hold a developer's provider settings.
                    env={k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_"))},
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            assert self._process.stdin is not None and self._process.stdout is not None
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
            if not line:
                raise RuntimeError(f"the forker exited with {self._process.wait()}")
            return json.loads(line)

    def spawn(
        self, argv: list[str], *, env: dict[str, str], cwd: Path, log_path: Path, errors_path: Path | None = None
    ) -> ForkedProcess:
        """Start `python *argv` (argv[0] a script) with exactly `env`, in `cwd`,
        its output appended to `log_path` (its errors too, unless `errors_path`)."""
        request = {"op": "spawn", "argv": argv, "env": env, "cwd": str(cwd), "log": str(log_path)}
        if errors_path is not None:
            request["errors"] = str(errors_path)
        reply = self._ask(request)
        return ForkedProcess(self, reply["pid"])

    def run(self, argv: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
        """`python *argv` to its end, as `subprocess.run(..., capture_output=True,
        text=True)` runs it: its exit status and both outputs."""
        with tempfile.TemporaryDirectory(prefix="haico-forked-") as scratch:
            out, err = Path(scratch) / "out", Path(scratch) / "err"
            process = self.spawn(argv, env=env, cwd=cwd, log_path=out, errors_path=err)
            try:
                code = process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
                raise
            return subprocess.CompletedProcess(
                ["python", *argv], code, out.read_text(errors="replace"), err.read_text(errors="replace")
            )

    def close(self) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                assert self._process.stdin is not None
                self._process.stdin.close()
                try:
                    self._process.wait(10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = None


class ForkedProcess:
    """A forked command, as the tests use a Popen."""

    def __init__(self, forker: Forker, pid: int):
        self._forker = forker
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._forker._ask({"op": "poll", "pid": self.pid})["returncode"]
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode


# The test process's forker (started on first use, closed at the end of the
# session by tests/conftest.py): the browser tests' servers and commands, and
# the tests that run a management command configured from the environment.
FORKER = Forker()


if __name__ == "__main__":
    serve()
