"""With DEBUG off (production), an unhandled error and a security refusal
each leave a line on stderr, the server's log; 404s do not. Run in a
subprocess configured from the environment as production is."""

import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]

REQUEST = """
import django
django.setup()
from django.conf import settings
from django.test import Client
settings.ROOT_URLCONF = "tests.support.failing_urls"
client = Client(raise_request_exception=False)
print(client.get({path!r}, HTTP_HOST={host!r}, secure=True).status_code)
"""


def _production_request(path, host="haico.example.com", tmp_path=None) -> subprocess.CompletedProcess:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DJANGO_", "HAICO_TEST"))},
        "DJANGO_SETTINGS_MODULE": "haico_site.settings",
        "DEBUG": "False",
        "SECRET_KEY": "a-production-like-secret-key-for-the-logging-test-" + "x" * 20,
        "ALLOWED_HOSTS": "haico.example.com",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    code = REQUEST.format(path=path, host=host)
    return subprocess.run([sys.executable, "-c", code], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60)


def test_with_debug_off_an_unhandled_error_is_logged_to_stderr_with_its_traceback(tmp_path):
    result = _production_request("/fails/", tmp_path=tmp_path)
    assert result.stdout.strip() == "500"
    assert "Internal Server Error: /fails/" in result.stderr
    assert "RuntimeError: a view that fails on purpose" in result.stderr


def test_with_debug_off_a_disallowed_host_is_logged_to_stderr(tmp_path):
    result = _production_request("/fails/", host="evil.example", tmp_path=tmp_path)
    assert result.stdout.strip() == "400"
    assert "Invalid HTTP_HOST header: 'evil.example'" in result.stderr


def test_with_debug_off_a_404_leaves_the_log_alone(tmp_path):
    result = _production_request("/nothing-here/", tmp_path=tmp_path)
    assert result.stdout.strip() == "404"
    assert result.stderr == ""
