"""The production start (deploy/start.sh) run for real, as a subprocess
(tests/deploy/, tests/browser/test_behind_proxy.py, which import the fixture).

`start_production(env, processes=N)` runs the script on two consecutive free
ports (or more), waits until every server process answers and returns a
`Production` (`.urls`, `.log_path`, `.server_lines()`, `.stop()`); every one
still running is stopped at teardown. The environment is production's:
DEBUG off (the script sees to it), a fresh secret, its own static root and,
unless given, its own SQLite file; nothing of the caller's model settings.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.ports import consecutive_free_ports

BASE_DIR = Path(__file__).resolve().parents[2]
START = BASE_DIR / "deploy" / "start.sh"


def production_env(workdir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "LANGSMITH_", "LANGCHAIN_", "PYTEST_", "HAICO_", "DJANGO_"))
        and k not in {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "STATIC_ROOT"}
    }
    env.update(
        {
            "PYTHON": sys.executable,
            "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "SECURE_SSL_REDIRECT": "False",
            "STATIC_ROOT": str(workdir / "static"),
            "HAICO_MODEL": "",
            "HAICO_MODELS": "",
            "OPENAI_API_KEY": "",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env


def run_start(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """deploy/start.sh to its end (for the refusals)."""
    return subprocess.run(["bash", str(START), *args], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=timeout)


@dataclass
class Production:
    port: int
    processes: int
    process: subprocess.Popen
    log_path: Path
    urls: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.urls[0]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def server_lines(self) -> list[str]:
        """What the server processes wrote (after the script started them)."""
        lines = self.log().splitlines()
        started = max(i for i, line in enumerate(lines) if line.startswith("deploy/start.sh: server process"))
        return [line for line in lines[started + 1 :] if not line.startswith("deploy/start.sh:")]

    def stop(self) -> int | None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        return self.process.returncode


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _answers(url: str) -> bool:
    """The process answers HTTP: /healthz, which is never redirected to https
    (the proxy test runs with SECURE_SSL_REDIRECT on) and says 200 or 503."""
    try:
        with _OPENER.open(f"{url}/healthz", timeout=5) as response:
            return response.status == 200
    except urllib.error.HTTPError as exc:
        return exc.code == 503
    except OSError:
        return False


@pytest.fixture
def start_production(tmp_path):
    started: list[Production] = []

    def start(extra_env: dict[str, str] | None = None, *, processes: int = 1, timeout: float = 600) -> Production:
        workdir = Path(tmp_path) / f"production-{len(started)}"
        workdir.mkdir()
        port = consecutive_free_ports(processes)
        env = production_env(workdir, {"HAICO_WEB_PROCESSES": str(processes), **(extra_env or {})})
        log_path = workdir / "start.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                ["bash", str(START), str(port)],
                cwd=BASE_DIR,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        production = Production(port, processes, process, log_path, [f"http://127.0.0.1:{port + i}" for i in range(processes)])
        started.append(production)
        deadline = time.monotonic() + timeout
        for url in production.urls:
            while not _answers(url):
                if process.poll() is not None:
                    raise RuntimeError(f"deploy/start.sh exited with {process.returncode}:\n{production.log()[-4000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{url} did not answer within {timeout} s:\n{production.log()[-4000:]}")
                time.sleep(0.2)
        return production

    yield start
    for production in started:
        production.stop()
