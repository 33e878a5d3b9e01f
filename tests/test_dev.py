"""`./dev serve [PORT]`: the port given is the one the server listens on.

The script runs for real in a copy of the repo's root with a stand-in
`.venv/bin/python` that records its arguments (the venv counts as installed),
so nothing is installed and no server starts."""

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def sandbox(tmp_path):
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    shutil.copy(ROOT / "requirements.txt", tmp_path / "requirements.txt")
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/../../calls.log"\n')
    python.chmod(0o755)
    requirements = (tmp_path / "requirements.txt").read_bytes()
    stamp = hashlib.sha1(requirements + requirements).hexdigest()[:12]
    (tmp_path / ".venv" / f".installed-{stamp}").touch()
    return tmp_path


def run_dev(sandbox, *args):
    return subprocess.run(
        ["bash", str(sandbox / "dev"), *args], capture_output=True, text=True, timeout=30,
        env={**os.environ, "PYTHON": "false"},
    )


def calls(sandbox) -> list[str]:
    log = sandbox / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_serve_listens_on_the_port_given(sandbox):
    result = run_dev(sandbox, "serve", "8010")
    assert result.returncode == 0, result.stderr
    assert calls(sandbox) == ["manage.py migrate --noinput", "manage.py runserver 127.0.0.1:8010"]


def test_serve_without_a_port_listens_on_8000(sandbox):
    result = run_dev(sandbox, "serve")
    assert result.returncode == 0, result.stderr
    assert calls(sandbox)[-1] == "manage.py runserver 127.0.0.1:8000"


@pytest.mark.parametrize("port", ["80x", "0", "70000", "-1"])
def test_serve_refuses_a_port_that_is_not_one_before_doing_anything(sandbox, port):
    result = run_dev(sandbox, "serve", port)
    assert result.returncode == 2
    assert "usage: ./dev serve [PORT]" in result.stderr
    assert calls(sandbox) == []


def test_prod_runs_the_production_start_script_with_the_port(sandbox):
    # deploy/start.sh itself runs for real in tests/deploy/test_start.py.
    (sandbox / "deploy").mkdir()
    start = sandbox / "deploy" / "start.sh"
    start.write_text('#!/bin/sh\necho "start.sh $@" >> "$(dirname "$0")/../calls.log"\n')
    start.chmod(0o755)
    result = run_dev(sandbox, "prod", "8010")
    assert result.returncode == 0, result.stderr
    assert calls(sandbox) == ["start.sh 8010"]
