"""Production settings (DEBUG off) as `manage.py check --deploy` and a
browser see them: the deployment check is clean, HSTS lasts a year with the
subdomains and asks for the browsers' preload list only when told to
(HAICO_HSTS_PRELOAD, docs/adr/0051). Each run is a process configured
from the environment, as production is: forked from the tests' warm
process (tests.support.forked_python, docs/adr/0082), which has imported
only libraries that read neither settings nor environment, so each run
spends its CPU on its settings, not on importing LangChain again."""

import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

from tests.support.forked_python import FORKER

BASE_DIR = Path(__file__).resolve().parents[2]

HEADER = """
import django
django.setup()
from django.test import Client
# /healthz: a page that names no static file (no collectstatic in these runs).
response = Client().get("/healthz", HTTP_HOST="haico.example.com", secure=True)
print(response.status_code, response.headers.get("Strict-Transport-Security"))
"""


def _production(args, tmp_path, **extra) -> subprocess.CompletedProcess:
    database = tmp_path / "db.sqlite3"
    # In WAL mode, as a deployment's database is by the time its server
    # answers (deploy/start.sh migrates it first). On a new file, the health
    # check's own connection and the checkpointer's each switch it to WAL at
    # once, and about one run in sixty under load found it locked (a 503).
    with closing(sqlite3.connect(database)) as connection:
        connection.execute("PRAGMA journal_mode=WAL")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DJANGO_", "HAICO_", "SECURE_"))},
        "DJANGO_SETTINGS_MODULE": "haico_site.settings",
        "DEBUG": "False",
        "SECRET_KEY": "a-production-like-secret-key-for-the-deploy-check-" + "x" * 30,
        "ALLOWED_HOSTS": "haico.example.com",
        "DATABASE_URL": f"sqlite:///{database}",
        **extra,
    }
    return FORKER.run(args, env=env, cwd=BASE_DIR, timeout=120)


def test_the_deployment_check_is_clean_with_production_settings(tmp_path):
    result = _production(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, HAICO_SIGNUP="invite")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_open_sign_up_without_approval_or_token_limit_is_named_by_the_deployment_check_without_stopping_the_start(tmp_path):
    """The defaults let anyone who finds the site spend its model keys
    without bound: the check names the settings that bound it, as an Info
    (deploy/start.sh stops at warnings; an open site can be meant)."""
    result = _production(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    said = result.stdout + result.stderr
    assert "(haico.I001) Sign-up is open to anyone, without approval and without a token limit" in said
    assert "HAICO_SIGNUP=invite (or closed), HAICO_SIGNUP_APPROVAL=True, or HAICO_DAILY_TOKEN_LIMIT" in said
    for bounded in ({"HAICO_SIGNUP_APPROVAL": "True"}, {"HAICO_MONTHLY_TOKEN_LIMIT": "2000000"}, {"HAICO_SIGNUP": "closed"}):
        quiet = _production(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, **bounded)
        assert "haico.I001" not in quiet.stdout + quiet.stderr and "no issues" in quiet.stdout, (bounded, quiet.stderr)


def test_hsts_is_a_year_with_subdomains_and_no_preload_by_default(tmp_path):
    result = _production(["-c", HEADER], tmp_path)
    assert result.stdout.split(None, 1) == ["200", "max-age=31536000; includeSubDomains\n"], result.stderr


def test_preload_is_asked_for_only_when_told_to(tmp_path):
    result = _production(["-c", HEADER], tmp_path, HAICO_HSTS_PRELOAD="1")
    assert result.stdout.split(None, 1) == ["200", "max-age=31536000; includeSubDomains; preload\n"], result.stderr
    check = _production(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], tmp_path, HAICO_HSTS_PRELOAD="1")
    assert check.returncode == 0, check.stdout + check.stderr


def test_preload_with_less_than_a_year_refuses_to_start_and_says_why(tmp_path):
    result = _production(["-c", HEADER], tmp_path, HAICO_HSTS_PRELOAD="1", HAICO_HSTS_SECONDS="3600")
    assert result.returncode != 0
    assert "HAICO_HSTS_PRELOAD=1 needs HAICO_HSTS_SECONDS of at least 31536000" in result.stderr
