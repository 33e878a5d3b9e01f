"""`./dev serve [PORT]`: the port given is the one the server listens on.
`./dev install`: the test lock installed, nothing run.
`./dev test`: the whole suite spread over xdist workers, and beside it its
database tests on PostgreSQL; tests picked by hand once, in one process.

The script runs for real in a copy of the repo's root with a stand-in
`.venv/bin/python` that records its arguments (the venv counts as installed),
so nothing is installed and no server starts."""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def sandbox(tmp_path):
    shutil.copy(ROOT / "dev", tmp_path / "dev")
    shutil.copy(ROOT / "requirements.lock", tmp_path / "requirements.lock")
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/../../calls.log"\n')
    python.chmod(0o755)
    stamp = hashlib.sha1((tmp_path / "requirements.lock").read_bytes()).hexdigest()[:12]
    (tmp_path / ".venv" / f".installed-{stamp}").touch()
    return tmp_path


def run_dev(sandbox, *args):
    return subprocess.run(
        ["bash", str(sandbox / "dev"), *args],
        capture_output=True,
        text=True,
        timeout=30,
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


def test_install_installs_the_test_lock_once_and_runs_nothing_else(sandbox):
    # What CI runs while the system packages install (.ci/run).
    shutil.copy(ROOT / "requirements-dev.lock", sandbox / "requirements-dev.lock")
    first = run_dev(sandbox, "install")
    assert first.returncode == 0, first.stderr
    assert calls(sandbox) == [
        "-m pip install -q --upgrade pip",
        "-m pip install -q --require-hashes -r requirements-dev.lock",
    ]
    again = run_dev(sandbox, "install")
    assert again.returncode == 0, again.stderr
    assert len(calls(sandbox)) == 2  # the lock is installed already: nothing more


def test_prod_runs_the_production_start_script_with_the_port(sandbox):
    # deploy/start.sh itself runs for real in tests/deploy/test_start.py.
    (sandbox / "deploy").mkdir()
    start = sandbox / "deploy" / "start.sh"
    start.write_text('#!/bin/sh\necho "start.sh $@" >> "$(dirname "$0")/../calls.log"\n')
    start.chmod(0o755)
    result = run_dev(sandbox, "prod", "8010")
    assert result.returncode == 0, result.stderr
    assert calls(sandbox) == ["start.sh 8010"]


def test_a_changed_lock_is_installed_with_its_hashes_checked_once(sandbox):
    lock = sandbox / "requirements.lock"
    lock.write_text(lock.read_text() + "\n# changed\n")
    install = ["-m pip install -q --upgrade pip", "-m pip install -q --require-hashes -r requirements.lock"]
    assert run_dev(sandbox, "serve").returncode == 0
    assert calls(sandbox)[:2] == install
    (sandbox / "calls.log").unlink()
    assert run_dev(sandbox, "serve").returncode == 0
    assert calls(sandbox) == ["manage.py migrate --noinput", "manage.py runserver 127.0.0.1:8000"]


# --- ./dev test ---------------------------------------------------------------------------

# The stand-in python logs, per call, the database the pass runs on, whether
# it keeps only the database tests, and its arguments; it exits with the code
# in exit_code (default 0), as pytest would.
RECORDING_PYTHON = """#!/bin/sh
root="$(dirname "$0")/../.."
echo "${DATABASE_URL:-sqlite}|${HAICO_TEST_DATABASE_ONLY:-all}|$*" >> "$root/calls.log"
exit "$(cat "$root/exit_code" 2>/dev/null || echo 0)"
"""


@pytest.fixture
def test_sandbox(sandbox):
    shutil.copy(ROOT / "requirements-dev.lock", sandbox / "requirements-dev.lock")
    stamp = hashlib.sha1((ROOT / "requirements-dev.lock").read_bytes()).hexdigest()[:12]
    (sandbox / ".venv" / f".installed-{stamp}").touch()
    (sandbox / ".venv" / "bin" / "python").write_text(RECORDING_PYTHON)
    (sandbox / "scripts").mkdir()
    (sandbox / "scripts" / "test_services.sh").write_text("#!/bin/sh\nexit 0\n")
    (sandbox / "scripts" / "test_services.sh").chmod(0o755)
    (sandbox / "tests").mkdir()
    (sandbox / "tests" / "test_one.py").write_text("def test_one():\n    pass\n")
    return sandbox


def run_dev_test(sandbox, *args, **env):
    return subprocess.run(
        ["bash", str(sandbox / "dev"), "test", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**{k: v for k, v in os.environ.items() if not k.startswith(("HAICO_", "DATABASE_URL"))}, "PYTHON": "false", **env},
    )


POSTGRES = {"HAICO_TEST_POSTGRES_URL": "postgres://u:p@127.0.0.1:5432/postgres"}
# What `nproc` says: the first pass has a worker more than that (./dev).
CORES = len(os.sched_getaffinity(0))


def test_the_whole_suite_is_spread_over_workers_and_the_database_tests_run_on_postgres_too(test_sandbox):
    result = run_dev_test(test_sandbox, "-ra", "--durations=15", **POSTGRES)
    assert result.returncode == 0, result.stderr
    assert sorted(calls(test_sandbox)) == [
        "postgres://u:p@127.0.0.1:5432/haico_suite|1|-m pytest -n auto --dist loadgroup --no-loadscope-reorder"
        " -m not browser and not deploy -ra --durations=15",
        f"sqlite|all|-m pytest -n {CORES + 1} --dist loadgroup --no-loadscope-reorder -ra --durations=15",
    ]


def test_the_postgresql_pass_runs_beside_the_first_and_its_output_follows_it(test_sandbox):
    # The first pass's stand-in waits (5 s at most) for the PostgreSQL pass to
    # have started: a PostgreSQL pass run only after the first one fails this.
    python = test_sandbox / ".venv" / "bin" / "python"
    python.write_text(
        RECORDING_PYTHON.replace(
            'exit "$(cat "$root/exit_code" 2>/dev/null || echo 0)"',
            'if [ -n "$DATABASE_URL" ]; then echo "postgres pass output"; exit 0; fi\n'
            'for _ in $(seq 50); do grep -q haico_suite "$root/calls.log" && exit 0; sleep 0.1; done\n'
            "exit 1",
        )
    )
    result = run_dev_test(test_sandbox, **POSTGRES)
    assert result.returncode == 0, result.stderr
    assert "postgres pass output" in result.stdout
    assert "on PostgreSQL (run beside the pass above)" in result.stderr


def test_without_postgresql_the_suite_runs_once(test_sandbox):
    assert run_dev_test(test_sandbox).returncode == 0
    assert calls(test_sandbox) == [f"sqlite|all|-m pytest -n {CORES + 1} --dist loadgroup --no-loadscope-reorder"]


@pytest.mark.parametrize(
    "pick", [["tests/test_one.py", "-x"], ["tests/test_one.py::test_one"], ["tests"], ["-k", "one"], ["-m", "browser"]]
)
def test_tests_picked_by_hand_run_once_in_one_process(test_sandbox, pick):
    assert run_dev_test(test_sandbox, *pick, **POSTGRES).returncode == 0
    assert calls(test_sandbox) == [f"sqlite|all|-m pytest {' '.join(pick)}"]


@pytest.mark.parametrize("how", [["-n", "3"], ["-n0"], ["-p", "no:xdist"], ["--dist", "load"], ["--pdb"]])
def test_arguments_that_say_how_to_run_are_left_to_pytest(test_sandbox, how):
    assert run_dev_test(test_sandbox, *how).returncode == 0
    assert calls(test_sandbox) == [f"sqlite|all|-m pytest {' '.join(how)}"]


def test_the_number_of_workers_can_be_chosen(test_sandbox):
    assert run_dev_test(test_sandbox, HAICO_TEST_WORKERS="0").returncode == 0
    assert calls(test_sandbox) == ["sqlite|all|-m pytest -n 0 --dist loadgroup --no-loadscope-reorder"]


def test_a_run_that_collects_no_tests_fails(test_sandbox):
    (test_sandbox / "exit_code").write_text("5")
    for services in ({}, POSTGRES):
        (test_sandbox / "calls.log").unlink(missing_ok=True)
        result = run_dev_test(test_sandbox, **services)
        assert result.returncode == 1
        assert "No tests were collected." in result.stderr
        assert len(calls(test_sandbox)) == (2 if services else 1)


@pytest.mark.parametrize(("first", "second", "status"), [(1, 0, 1), (0, 1, 1), (0, 5, 1)])
def test_a_failure_in_either_pass_fails_the_run(test_sandbox, first, second, status):
    # The stand-in exits with the first pass's code on SQLite, the second's on PostgreSQL.
    python = test_sandbox / ".venv" / "bin" / "python"
    python.write_text(
        RECORDING_PYTHON.replace(
            'exit "$(cat "$root/exit_code" 2>/dev/null || echo 0)"',
            f'[ -z "$DATABASE_URL" ] && exit {first}; exit {second}',
        )
    )
    assert run_dev_test(test_sandbox, **POSTGRES).returncode == status
    assert len(calls(test_sandbox)) == 2


@pytest.mark.heavy  # collects the whole suite twice
def test_the_postgresql_pass_keeps_the_tests_that_use_the_database(tmp_path):
    """HAICO_TEST_DATABASE_ONLY=1 (tests/conftest.py) keeps the tests with the
    django_db mark or a database fixture; a test marked postgres or redis
    that does not use Django's database (it makes its own database or
    reaches Redis) does the same in both passes and runs once."""
    (tmp_path / "test_kinds.py").write_text(
        "import pytest\n"
        "def test_pure():\n    pass\n"
        "@pytest.mark.django_db\ndef test_marked():\n    pass\n"
        "def test_with_db_fixture(db):\n    pass\n"
        "def test_with_transactional_db(transactional_db):\n    pass\n"
        "@pytest.fixture\ndef person(django_user_model, db):\n    return None\n"
        "def test_through_a_fixture(person):\n    pass\n"
        "@pytest.mark.postgres\ndef test_postgres():\n    pass\n"
        "@pytest.mark.redis\ndef test_redis():\n    pass\n"
        "@pytest.mark.postgres\n@pytest.mark.django_db\ndef test_postgres_and_django_db():\n    pass\n"
        "def test_settings_only(settings):\n    pass\n"
    )
    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    collected = {}
    for only in ("0", "1"):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
                "--rootdir",
                str(tmp_path),
                "-c",
                str(ROOT / "pytest.ini"),
                str(tmp_path / "test_kinds.py"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env={**os.environ, "HAICO_TEST_DATABASE_ONLY": only},
        )
        assert result.returncode == 0, result.stdout + result.stderr
        collected[only] = {line.split("::")[1] for line in result.stdout.splitlines() if "::" in line}
    assert collected["0"] == {
        "test_pure",
        "test_marked",
        "test_with_db_fixture",
        "test_with_transactional_db",
        "test_through_a_fixture",
        "test_postgres",
        "test_redis",
        "test_postgres_and_django_db",
        "test_settings_only",
    }
    assert collected["1"] == {
        "test_marked",
        "test_with_db_fixture",
        "test_with_transactional_db",
        "test_through_a_fixture",
        "test_postgres_and_django_db",
    }
