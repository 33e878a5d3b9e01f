"""The repository stands alone: no tracked file cites the sections or the
documents of the specification HAICO was built from, which are not in it.
What the code takes from that specification is docs/adr/0072; comments and
docs cite it, or another ADR, or say the reason in place."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THIS_FILE = Path(__file__).resolve().relative_to(ROOT).as_posix()
# Third-party files kept as published.
VENDORED = ("static/vendor/", "tests/support/vendor/")
# Compared in lower case: "Core seed §4.1" is the same citation.
CITATIONS = ("seed §", "design §", "design.md", "stack_notes", "core seed")


def tracked_files() -> list[str]:
    result = subprocess.run(
        ["git", "-c", f"safe.directory={ROOT}", "ls-files", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    )
    return [name for name in result.stdout.decode("utf-8").split("\0") if name]


def citations_in(text: str) -> list[tuple[int, str]]:
    """(line number, line) for every line of `text` with a citation."""
    return [
        (number, line.strip())
        for number, line in enumerate(text.splitlines(), start=1)
        if any(citation in line.lower() for citation in CITATIONS)
    ]


def test_no_tracked_file_cites_documents_outside_the_repository():
    names = [name for name in tracked_files() if name != THIS_FILE and not name.startswith(VENDORED)]
    assert len(names) > 100, names  # the listing really is the repository's
    offending = []
    for name in names:
        path = ROOT / name
        if not path.is_file():  # deleted in the working tree, not yet committed
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        offending += [f"{name}:{number}: {line}" for number, line in citations_in(text)]
    assert offending == [], (
        "cite docs/adr (what the code takes from its specification is docs/adr/0072) "
        "or say the reason in place:\n" + "\n".join(offending)
    )


def test_each_form_of_citation_is_caught():
    text = "\n".join(
        [
            "Plain text (docs/adr/0072).",
            '"""The chat model, built from settings (DESIGN §4).',
            "Core seed §4.1. A provider sometimes answers",
            "warns about truncated ones (seed §4.1)",
            "# see /work/shared/DESIGN.md",
            '# "database is locked" (see STACK_NOTES).',
            "the core seed's example",
        ]
    )
    assert [number for number, _ in citations_in(text)] == [2, 3, 4, 5, 6, 7]
