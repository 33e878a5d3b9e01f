"""Every class the style sheets style is one the app still writes: a
template, a script (ours or a vendored library's) or the Python that builds
markup uses it. Classes built from a name and a value ("is-{{ kind }}",
f"tnode-{status}") count when that prefix is built somewhere. Rules for
markup that is gone (the old hover toolbar of plan steps) fail here."""

import re
from pathlib import Path

import django_htmx

ROOT = Path(__file__).resolve().parent.parent


def _sources() -> str:
    parts = []
    for pattern in ("templates/**/*.html", "static/js/*.js", "static/vendor/*.js", "*/**/*.py"):
        for path in ROOT.glob(pattern):
            if ".venv" in path.parts or "tests" in path.parts or "migrations" in path.parts:
                continue
            parts.append(path.read_text(errors="ignore"))
    # htmx itself (served from django-htmx's static files) sets its request
    # classes, e.g. htmx-request and htmx-indicator.
    for path in (Path(django_htmx.__file__).parent / "static" / "django_htmx").glob("*.js"):
        parts.append(path.read_text(errors="ignore"))
    return "\n".join(parts)


def _styled_classes() -> dict[str, str]:
    classes = {}
    for sheet in sorted((ROOT / "static" / "css").glob("*.css")):
        text = re.sub(r"/\*.*?\*/", "", sheet.read_text(), flags=re.DOTALL)
        text = re.sub(r"url\([^)]*\)", "", text)  # data: URIs hold "www.w3.org" and the like
        text = re.sub(r"\{[^{}]*\}", "{}", text)  # declarations ("0.5em") are not selectors
        for name in re.findall(r"\.(-?[A-Za-z_][\w-]*)", text):
            classes.setdefault(name, sheet.name)
    return classes


# Class names the markup builds from a value: the state classes (is-{{ kind }}),
# the activity log's levels and kinds, trajectory nodes and edges by status and
# kind, preferences by kind.
BUILT = ("is-", "level-", "kind-", "tnode-", "tedge-", "pref-")


def _built_by_prefix(name: str, sources: str) -> bool:
    """ "is-stopped" counts when the sources build "is-{{ ... }}" or f"is-{...}"."""
    return any(name.startswith(prefix) and prefix + "{" in sources for prefix in BUILT)


def test_every_styled_class_is_used_by_the_markup():
    sources = _sources()
    unused = sorted(
        f"{name} ({sheet})"
        for name, sheet in _styled_classes().items()
        if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w])", sources) and not _built_by_prefix(name, sources)
    )
    assert not unused, f"styles for classes nothing writes any more (remove them): {unused}"


def test_the_old_hover_toolbar_of_plan_steps_is_gone():
    css = (ROOT / "static" / "css" / "haico.css").read_text()
    assert ".step .row-actions" not in css and ".step-check" not in css
    assert ".step:hover .row-actions" not in css and ".step:focus-within .row-actions" not in css
