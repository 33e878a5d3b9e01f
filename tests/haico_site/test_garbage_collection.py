"""A server process's garbage collector (haico_site/garbage_collection.py,
docs/adr/0166): what the server loaded at start is set aside, and its
young objects are collected every 50 000 new ones, not CPython's 700."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What the server process imports (haico_site.serve hands daphne this
# application), then how its collector is set.
READ_THE_COLLECTOR = """
import gc, json
import haico_site.asgi
print(json.dumps({"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}))
"""


def test_the_server_application_sets_aside_what_it_loaded_and_collects_young_objects_every_50_000():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "haico_site.settings"}
    result = subprocess.run(
        [sys.executable, "-c", READ_THE_COLLECTOR], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    collector = json.loads(result.stdout.strip().splitlines()[-1])
    assert collector["threshold"] == [50_000, 10, 10]
    # Django, LangChain and the project's modules: far more than any test's objects.
    assert collector["frozen"] > 100_000
