"""The code passes ruff, lint and format, with the settings in pyproject.toml
(`ruff check . && ruff format .` before committing)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).with_name("ruff")


def _ruff(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # --no-cache: a test run leaves no .ruff_cache behind.
    return subprocess.run([str(RUFF), *args, "--no-cache", "."], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_ruff_check_finds_nothing():
    result = _ruff("check", cwd=ROOT)
    assert result.returncode == 0, (
        "ruff check . found problems (ruff check --fix . mends most):\n" + result.stdout + result.stderr
    )


def test_ruff_format_would_change_nothing():
    result = _ruff("format", "--check", cwd=ROOT)
    assert result.returncode == 0, "ruff format . would reformat these files:\n" + result.stdout + result.stderr


def test_the_settings_catch_unsorted_imports_and_unformatted_code(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "module.py").write_text("import sys\nimport os\n\nVALUE = {'a':1}\nprint(os, sys, VALUE)\n")
    checked = _ruff("check", cwd=tmp_path)
    assert checked.returncode == 1
    assert "I001" in checked.stdout
    formatted = _ruff("format", "--check", cwd=tmp_path)
    assert formatted.returncode == 1
    assert "module.py" in formatted.stdout
