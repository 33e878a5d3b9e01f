"""The code passes mypy with the settings in pyproject.toml ([tool.mypy]: workspace/
and agent/, with django-stubs); why it starts lenient: docs/adr/0079."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.heavy  # mypy over the apps: 17-27 s of CPU on a clean clone
def test_mypy_finds_nothing():
    # mypy keeps its cache in .mypy_cache (ignored by git): a later run checks
    # only what changed (about 15 s). On a clean clone the first run also reads
    # the typed packages the code imports (langchain_core, langgraph, openai,
    # pydantic): about 45 CPU seconds, over two minutes on a busy 2-core machine.
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, "mypy found problems:\n" + result.stdout + result.stderr
