"""Real-browser fixtures: a live HAICO server in a subprocess and Chromium.

pytest-django's ``live_server`` is a WSGI server (no WebSockets), so the real
ASGI app is started the way ``./dev serve`` starts it (``manage.py runserver``,
which is daphne's and also serves the static files in DEBUG) against its own
temporary SQLite file, with the site's settings and a fast password hasher
(tests/browser/server_settings.py), forked from a process that has already
imported the heavy libraries (tests/support/forked_python.py,
docs/adr/0082). Browser tests therefore never use the test process's
``django_db`` fixtures: they act through the browser and, where needed, read
the subprocess's database with ``sqlite3`` (``server.query``).

Fixtures:
- ``browser`` (package): one headless Debian Chromium for all browser tests.
- ``page`` (function): a fresh context and page; a screenshot and the server
  log tail are kept under /tmp/haico-browser-failures/ when the test fails,
  and a Content-Security-Policy violation in its pages fails the test.
- ``haico_server`` (function): a running server with a fresh database
  (``.url``, ``.db_path``, ``.query(sql, params)``, ``.manage(*args)``,
  ``.create_user(username, password)``, ``.log_tail()``, ``.kill()`` (SIGKILL,
  as a crash would) and ``.start()`` (again, on the same address and database)).
- ``start_haico_server(extra_env=None, *, database_url=None)`` (function):
  the factory behind it, for tests that need another environment (a scripted
  model server: OPENAI_BASE_URL / OPENAI_API_KEY / HAICO_MODEL; REDIS_URL) or
  PostgreSQL (``database_url``, already migrated: the
  ``migrated_postgres_database_url`` fixture; several servers may share it).
- ``model_server`` (function): a scripted OpenAI-compatible model offering
  ``helpers.MODEL``, with no replies scripted; a test file whose tests share a
  script overrides it with ``def model_server(model_server)`` that scripts and
  returns it. ``helpers.model_env(model_server)`` makes it the site's model.
- ``private_redis`` (function): a Redis of the test's own
  (tests.support.services.PrivateRedis, started), for a test that stops and
  starts it; never the shared one.
- ``private_postgres`` (function): a migrated PostgreSQL cluster of the test's
  own (tests.support.services.PrivatePostgres, started), for a test that stops
  and starts the database under a server; a copy of one migrated once.
- ``owner_workspace`` (function): ``(page, url)``, ``page`` signed in as a new
  person (OWNER) on a new thread of ``haico_server``, its socket open;
  ``second_tab``: another tab of that person on the same thread.

Missing Chromium skips locally; with HAICO_REQUIRE_ALL_TESTS=1 (CI) the skip
becomes a failure (tests/conftest.py).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.forked_python import FORKER, ForkedProcess
from tests.support.migrations import migrated_sqlite_template
from tests.support.ports import free_port
from tests.support.services import PrivatePostgres, PrivateRedis, migrated_private_postgres

BASE_DIR = Path(__file__).resolve().parents[2]
FAILURE_DIR = Path("/tmp/haico-browser-failures")
PASSWORD = "correct-horse-battery-staple"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]

# Default Playwright timeouts are 30 s; a local server answers in
# milliseconds, so a shorter wait turns a missing element into a quick,
# readable failure instead of a long hang.
DEFAULT_TIMEOUT_MS = 10_000


def _is_browser_test(item) -> bool:
    return Path(str(item.fspath)).is_relative_to(Path(__file__).parent)


def pytest_itemcollected(item):
    # Marked as soon as collected, before any plugin reorders, selects (-m)
    # or, under pytest-xdist, names the tests by their group.
    if _is_browser_test(item):
        item.add_marker(pytest.mark.browser)
        item.add_marker(pytest.mark.xdist_group(f"browser-{Path(str(item.fspath)).stem}"))


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Keep each phase's report on the item so fixtures can tell, at
    # teardown, whether the test failed (for the screenshot).
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def _chromium_path() -> str | None:
    """Chromium's headless shell where it is installed (Debian's
    `chromium-headless-shell`, the build Playwright itself drives headless),
    else the full browser in headless mode: the same engine, but the full
    browser spends about twice the CPU on every page (docs/adr/0096), and
    the browser tests share two cores with the rest of the suite in CI."""
    for name in ("chromium-headless-shell", "chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def server_env(
    db_path: Path | None, extra_env: dict[str, str] | None = None, *, database_url: str | None = None
) -> dict[str, str]:
    """The subprocess environment: development settings, its own database, no model.

    Every provider variable is dropped and the model settings are set empty
    explicitly, so neither the caller's shell nor a developer's .env file can
    send a browser test to a real provider. Tests that drive a scripted model
    pass OPENAI_BASE_URL / OPENAI_API_KEY / HAICO_MODEL in ``extra_env``.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_", "PYTEST_", "HAICO_TEST_DB"))
        and k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY"}
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "tests.browser.server_settings",
            "DATABASE_URL": database_url or f"sqlite:///{db_path}",
            "DEBUG": "True",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "OPENAI_API_KEY": "",
            "HAICO_MODEL": "",
            "HAICO_MODELS": "",
            "PYTHONUNBUFFERED": "1",
            # A server that dies of a signal (a crash in a C extension) writes
            # every thread's stack to its log before it goes.
            "PYTHONFAULTHANDLER": "1",
        }
    )
    env.update(extra_env or {})
    return env


# Every server and management command of the browser tests is forked from
# one process per test process that has imported the heavy libraries
# already (tests.support.forked_python.FORKER): about three seconds saved
# per start (docs/adr/0082).


def _manage(env: dict[str, str], *args: str, timeout: float = 120) -> str:
    """`manage.py *args` with `env`; its standard output, or RuntimeError
    with both outputs when it fails."""
    done = FORKER.run(["manage.py", *args], env=env, cwd=BASE_DIR, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


@dataclass
class HaicoServer:
    url: str
    db_path: Path | None  # None when the server runs on PostgreSQL
    env: dict[str, str]
    log_path: Path
    process: ForkedProcess | None = field(default=None, repr=False)

    def query(self, sql: str, params: tuple | dict = ()) -> list[tuple]:
        """Read the server's database (read-only; WAL lets it run beside the server)."""
        if self.db_path is None:
            raise RuntimeError("query() reads the SQLite file; this server runs on PostgreSQL")
        conn = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    def manage(self, *args: str, timeout: float = 120) -> str:
        """Run a management command against the server's database."""
        return _manage(self.env, *args, timeout=timeout)

    def create_user(self, username: str, password: str = PASSWORD) -> None:
        # `shell -c` takes no extra argv, so the values travel in the environment.
        env = {**self.env, "HAICO_NEW_USERNAME": username, "HAICO_NEW_PASSWORD": password}
        _manage(
            env,
            "shell",
            "-c",
            "import os; from django.contrib.auth import get_user_model; "
            "get_user_model().objects.create_user(username=os.environ['HAICO_NEW_USERNAME'], "
            "password=os.environ['HAICO_NEW_PASSWORD'])",
        )

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def state(self) -> str:
        """The server process: "running", or how it ended ("exited with 1", "killed by SIGSEGV")."""
        returncode = self.process.poll() if self.process is not None else None
        if returncode is None:
            return "running"
        if returncode < 0:
            return f"killed by {signal.Signals(-returncode).name}"
        return f"exited with {returncode}"

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def start(self) -> None:
        """Start (or start again) the server on its address, and wait until it answers."""
        self.process = FORKER.spawn(
            ["manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"],
            env=self.env,
            cwd=BASE_DIR,
            log_path=self.log_path,
        )
        _wait_until_serving(self)

    def kill(self) -> None:
        """SIGKILL the whole server, the way a crash or the OOM killer would:
        nothing gets to clean up."""
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait(timeout=10)

    def stop(self) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        # The server runs in its own session: signal the whole group so no
        # worker outlives the test. Daphne can ignore SIGTERM while a thread
        # (e.g. an unclosed aiosqlite connection) is alive, hence the SIGKILL.
        for sig, wait in ((signal.SIGINT, 5), (signal.SIGTERM, 3), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue


def _listens_on(pid: int, port: int) -> bool | None:
    """Whether process `pid` holds the listening TCP socket on `port`, from
    /proc (None where /proc cannot tell, as on a machine without it)."""
    try:
        rows = Path("/proc/net/tcp").read_text().splitlines()[1:]
        fds = list(os.scandir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    listening = set()
    for row in rows:
        fields = row.split()
        local_port, state, inode = int(fields[1].rsplit(":", 1)[1], 16), fields[3], fields[9]
        if state == "0A" and local_port == port:  # 0A: LISTEN
            listening.add(f"socket:[{inode}]")
    for fd in fds:
        try:
            if os.readlink(fd.path) in listening:
                return True
        except OSError:
            continue
    return False


def _wait_until_serving(server: HaicoServer, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    probe = f"{server.url}/accounts/login/"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the server exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(probe, timeout=2) as resp:
                answered = resp.status < 500
        except urllib.error.HTTPError as exc:
            if exc.code >= 500:
                raise RuntimeError(f"{probe} answered {exc.code}:\n{server.log_tail()}") from exc
            answered = True
        except (TimeoutError, urllib.error.URLError, ConnectionError):
            answered = False
        # The port was free when picked, but another test's server may have
        # taken it since: then that server answers while this one fails to
        # bind, and the test would run against someone else's database. Only
        # an answer from the socket this process listens on counts; the
        # process then exits with "address already in use" and the caller
        # picks another port.
        if answered and _listens_on(server.process.pid, server.port) is not False:
            return
        time.sleep(0.1)
    raise RuntimeError(f"the server did not answer within {timeout}s:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def _migrated_db_template() -> Path:
    """The migrated SQLite file every server starts from a copy of: the
    suite's template (tests.support.migrations.migrated_sqlite_template),
    made by the first test process of the first run that needs it."""
    return migrated_sqlite_template()


@pytest.fixture
def start_haico_server(_migrated_db_template, request):
    """Factory: ``start_haico_server(extra_env=None) -> HaicoServer`` (stopped at teardown)."""
    started: list[HaicoServer] = []
    # The servers of one test share their cache's counts (rate limits, open
    # sockets) in Redis, as a deployment's do; another test's never reach them.
    cache_key_prefix = f"haico-test-{uuid.uuid4().hex[:12]}"

    def start(extra_env: dict[str, str] | None = None, *, database_url: str | None = None) -> HaicoServer:
        extra_env = {"HAICO_CACHE_KEY_PREFIX": cache_key_prefix, **(extra_env or {})}
        workdir = Path(tempfile.mkdtemp(prefix="haico-live-"))
        if database_url:
            # Several servers may share one PostgreSQL database (scale-out
            # tests). It comes migrated (the migrated_postgres_database_url
            # fixture, or a restore of one): a migrate at every start would
            # cost a second or more of CPU to do nothing.
            db_path = None
            env = server_env(None, extra_env, database_url=database_url)
        else:
            db_path = workdir / "db.sqlite3"
            shutil.copyfile(_migrated_db_template, db_path)
            env = server_env(db_path, extra_env)
        log_path = workdir / "server.log"
        last_error: Exception | None = None
        # A port picked free can be taken before the server binds it; retry.
        for _attempt in range(3):
            port = free_port()
            server = HaicoServer(url=f"http://127.0.0.1:{port}", db_path=db_path, env=env, log_path=log_path)
            started.append(server)
            try:
                server.start()
                return server
            except RuntimeError as exc:
                last_error = exc
                server.stop()
                if "address already in use" not in server.log_tail().lower():
                    break
        raise RuntimeError(f"could not start the HAICO server: {last_error}")

    yield start

    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    for server in started:
        # Whether the server was still running when the test failed tells a
        # stuck server from one that died (a page then shows "Reconnecting…").
        state = server.state() if failed else ""
        server.stop()
        if failed:
            print(f"--- server log ({server.log_path}), {state} ---\n{server.log_tail()}")
        else:
            shutil.rmtree(server.log_path.parent, ignore_errors=True)


@pytest.fixture
def private_redis(tmp_path):
    if reason := PrivateRedis.available():
        pytest.skip(f"{reason} (apt-get install redis-server)")
    redis = PrivateRedis(tmp_path)
    redis.start()
    yield redis
    redis.close()


@pytest.fixture
def haico_server(start_haico_server) -> HaicoServer:
    return start_haico_server()


@pytest.fixture
def private_postgres():
    """A migrated PostgreSQL cluster of the test's own (never the shared
    one), for a test that stops and starts it under a server: a copy of one
    migrated once (tests.support.services.migrated_private_postgres), not
    migrated at each test: a migrate took 14-22 s under load, a copy well
    under a second (docs/adr/0096)."""
    if reason := PrivatePostgres.available():
        pytest.skip(reason)
    postgres = migrated_private_postgres()
    try:
        postgres.start()
        yield postgres
    finally:
        postgres.close()


@pytest.fixture(scope="package")
def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # pragma: no cover - depends on the machine
        pytest.skip("playwright is not installed")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="package")
def browser(_playwright):
    executable = _chromium_path()
    if executable is None:
        pytest.skip("Chromium is not installed (apt-get install chromium-headless-shell)")
    browser = _playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


def _safe_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid)[-150:]


def _is_csp_violation(message) -> bool:
    return message.type == "error" and "Content Security Policy" in message.text


@pytest.fixture
def new_page(browser, request):
    """Factory: ``new_page() -> Page`` in a fresh context (its own cookies: another person).

    A Content-Security-Policy violation in any page of these contexts fails
    the test (docs/adr/0059), unless it is marked ``allows_csp_violations``."""
    contexts = []
    violations: list[str] = []

    def make():
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(DEFAULT_TIMEOUT_MS)
        context.on(
            "console",
            lambda message: (
                _is_csp_violation(message) and violations.append(f"{message.page.url if message.page else '?'}: {message.text}")
            ),
        )
        contexts.append(context)
        return context.new_page()

    yield make

    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    if failed:
        FAILURE_DIR.mkdir(parents=True, exist_ok=True)
        for n, context in enumerate(contexts):
            for m, pg in enumerate(context.pages):
                path = FAILURE_DIR / f"{_safe_name(request.node.nodeid)}-{n}-{m}.png"
                try:
                    pg.screenshot(path=str(path), full_page=True)
                    print(f"screenshot: {path} ({pg.url})")
                except Exception as exc:  # a crashed page must not hide the real failure
                    print(f"screenshot failed for {pg.url}: {exc}")
    for context in contexts:
        context.close()
    if violations and not failed and request.node.get_closest_marker("allows_csp_violations") is None:
        pytest.fail("the pages broke the Content-Security-Policy:\n" + "\n".join(violations))


@pytest.fixture
def page(new_page):
    return new_page()


# --- a person on a thread, and a scripted model: the set-up most tests start from.
# (helpers imports this module, hence its names imported inside the fixtures.)

OWNER = "ada"


@pytest.fixture
def owner_workspace(page, haico_server):
    """`page` signed in as a new person (OWNER), without the sign-up form, on a
    new thread of `haico_server`, its socket open: (page, the workspace URL)."""
    from .helpers import new_thread_for, wait_for_socket

    url = new_thread_for(page, haico_server.url, OWNER)
    wait_for_socket(page)
    return page, url


@pytest.fixture
def second_tab(owner_workspace):
    """Another tab of `owner_workspace`'s person on the same thread, both sockets open."""
    from .helpers import open_second_tab

    return open_second_tab(*owner_workspace)


@pytest.fixture
def model_server():
    """A scripted OpenAI-compatible model offering MODEL, its replies scripted by the test."""
    from tests.support.openai_server import OpenAICompatibleServer

    from .helpers import MODEL

    with OpenAICompatibleServer(models=[MODEL]) as server:
        yield server
