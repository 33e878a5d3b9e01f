"""Every third-party module the code imports is declared in requirements*.txt,
and the lock files that ./dev installs from pin each declared package at the
version declared, with hashes (docs/adr/0073)."""

import ast
import functools
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_CODE = ["agent", "conversations", "workspace", "haico_site", "deploy", "scripts", "manage.py"]
# Only the tests and the benches use what requirements-dev.txt adds.
DEV_CODE = ["tests", "bench"]


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def python_files(places: list[str]) -> list[Path]:
    files = []
    for place in places:
        path = ROOT / place
        files.extend([path] if path.is_file() else path.rglob("*.py"))
    return files


def our_modules() -> set[str]:
    """Names the repository's own files answer to, wherever a test puts them
    on sys.path (deploy/nginx_conf.py is imported as nginx_conf)."""
    names = set()
    for file in python_files([*RUNTIME_CODE, *DEV_CODE]):
        names.add(file.stem)
        names.add(file.relative_to(ROOT).parts[0].removesuffix(".py"))
    return names


def third_party_imports(places: list[str]) -> dict[str, str]:
    """Each top-level module imported from outside the repository and the
    standard library, with one file that imports it."""
    ours = our_modules()
    found: dict[str, str] = {}
    for file in python_files(places):
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ours:
                    found.setdefault(top, str(file.relative_to(ROOT)))
    return found


def declared(requirements: str) -> dict[str, str]:
    """Package → pinned version, following -r includes."""
    pins: dict[str, str] = {}
    for line in (ROOT / requirements).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            pins.update(declared(line[3:].strip()))
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;]+)\s*(;.*)?", line)
        assert match, f"{requirements}: {line!r} is not pinned with =="
        pins[normalized(match[1])] = match[3]
    return pins


def locked(lock: str) -> dict[str, set[str]]:
    """Package → the versions the lock pins (one per platform marker), each
    checked to come with its hashes."""
    pins: dict[str, set[str]] = {}
    lines = (ROOT / lock).read_text().splitlines()
    for number, line in enumerate(lines):
        match = re.match(r"([A-Za-z0-9_.\-]+)(\[[^\]]*\])?==([^\s;\\]+)", line)
        if match:
            following = lines[number + 1] if number + 1 < len(lines) else ""
            assert line.endswith("\\") and following.strip().startswith("--hash=sha256:"), f"{lock}: {line!r} has no hashes"
            pins.setdefault(normalized(match[1]), set()).add(match[3])
    return pins


@functools.cache
def installed_packages() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution_of(module: str, declared_names: set[str]) -> str | None:
    """The distribution that installs module: the one named like it when
    there is one (daphne also ships files under twisted/, yet twisted is
    Twisted's), otherwise whichever of them is declared."""
    candidates = [normalized(d) for d in installed_packages().get(module, [])]
    if normalized(module) in candidates:
        return normalized(module)
    return next((d for d in candidates if d in declared_names), candidates[0] if candidates else None)


@pytest.mark.parametrize(
    ("code", "requirements"),
    [(RUNTIME_CODE, "requirements.txt"), (DEV_CODE, "requirements-dev.txt")],
    ids=["runtime", "tests-and-benches"],
)
def test_every_module_the_code_imports_is_declared(code, requirements):
    pins = declared(requirements)
    undeclared = []
    for module, where in sorted(third_party_imports(code).items()):
        distribution = distribution_of(module, set(pins))
        if distribution not in pins:
            undeclared.append(f"{module} (imported by {where}; distribution {distribution or 'not installed'})")
    assert not undeclared, f"not declared in {requirements}: " + ", ".join(undeclared)


@pytest.mark.parametrize(
    ("requirements", "lock"),
    [("requirements.txt", "requirements.lock"), ("requirements-dev.txt", "requirements-dev.lock")],
)
def test_the_lock_pins_every_declared_package_at_its_declared_version(requirements, lock):
    pins = locked(lock)
    disagreeing = {
        package: (version, pins.get(package))
        for package, version in declared(requirements).items()
        if pins.get(package) != {version}
    }
    assert not disagreeing, f"{lock} disagrees with {requirements} (declared, locked): {disagreeing}; run ./dev lock"


def test_the_tests_run_on_the_versions_that_ship():
    runtime, dev = locked("requirements.lock"), locked("requirements-dev.lock")
    disagreeing = {package: (versions, dev.get(package)) for package, versions in runtime.items() if dev.get(package) != versions}
    assert not disagreeing, f"requirements-dev.lock pins these apart from requirements.lock: {disagreeing}"


def test_uvloop_is_required_only_where_it_has_wheels():
    line = next(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("uvloop=="))
    assert 'sys_platform != "win32"' in line and 'platform_python_implementation == "CPython"' in line
