"""The apps import one way (docs/adr/0006): haico_site > conversations >
agent > workspace, function-level imports included, checked by
import-linter against the contract in .importlinter."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env={"PYTHONPATH": str(cwd)}, capture_output=True, text=True, timeout=120
    )


def test_the_apps_import_downwards_only():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_the_contract_catches_an_upward_import_inside_a_function(tmp_path):
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    for app in ("haico_site", "conversations", "agent", "workspace"):
        (tmp_path / app).mkdir()
        (tmp_path / app / "__init__.py").write_text("")
    (tmp_path / "conversations" / "live.py").write_text("VALUE = 1\n")
    (tmp_path / "workspace" / "views.py").write_text("def view():\n    from conversations.live import VALUE\n    return VALUE\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "workspace.views -> conversations.live" in result.stdout
