"""What a document export costs at the sizes people reach (docs/adr/0053).

Each figure is GET document/export/?format=… through the real view, the
file the person downloads after clicking Export, the median of --repeats:

- a 100 000-character report citing 3 000 distinct links (1 500 reference
  lines, each a link and an autolink), as DOCX: every link is a
  relationship of the document part;
- a 100 000-character report in a thread with 50 charts and tables of
  2 000 rows each (their appendix carries each one's first 200 rows,
  docs/adr/0141), as HTML and as DOCX;
- the report alone, as DOCX, for the floor.

With --profile links (or artifacts, or report) it prints the functions the
DOCX export of that thread spends its time in (cProfile: by cumulative
time, then by own time).

Run: .venv/bin/python -m bench.document_exports [--repeats 3] [--profile links] (--repeats 0: the profile alone)
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import set_up_django  # noqa: E402

set_up_django(prefix="haico-exports-", database_file="exports.sqlite3")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from conversations.services import thread_create  # noqa: E402
from workspace.services import document as document_services  # noqa: E402
from workspace.services.artifacts import artifact_create  # noqa: E402

REPORT_CHARS = 100_000
LINK_LINES = 1_500  # two distinct links each
ARTIFACTS, ARTIFACT_ROWS = 50, 2_000
WORDS = (
    "the a of to and in that is for on with as by this be are from at or an which it not have has their more "
    "results method data model analysis study design value table figure section report team plan review"
).split()


def report(chars: int, seed: int = 7) -> str:
    """Headings, paragraphs with emphasis and code, bullet and numbered lists, about `chars` long."""
    rng = random.Random(seed)

    def sentence() -> str:
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 18))]
        words[rng.randrange(len(words))] = f"**{words[0]}**"
        return " ".join(words).capitalize() + "."

    out: list[str] = []
    section = 0
    while sum(len(part) + 2 for part in out) < chars:
        section += 1
        out.append(f"## Section {section}")
        out.append(" ".join(sentence() for _ in range(5)) + " See `value`.")
        out.append("\n".join(f"- {sentence()}" for _ in range(4)))
        out.append("\n".join(f"{n}. {sentence()}" for n in range(1, 4)))
    return "\n\n".join(out) + "\n"


def references(lines: int) -> str:
    return "".join(
        f"{n}. See [source {n}](https://example.org/paper/{n}?q={n}) and <https://doi.org/10.1000/{n}>.\n"
        for n in range(1, lines + 1)
    )


def median_ms(client: Client, url: str, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        response = client.get(url)
        samples.append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
    return statistics.median(samples) * 1000


def main(repeats: int, profile: str | None) -> None:
    call_command("migrate", verbosity=0)
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)

    plain = thread_create(owner=owner, title="Report")
    document_services.document_save(thread=plain, title="Report", content=report(REPORT_CHARS))

    linked = thread_create(owner=owner, title="References")
    refs = references(LINK_LINES)
    text = report(REPORT_CHARS - len(refs)) + "\n## References\n\n" + refs
    document_services.document_save(thread=linked, title="Report", content=text)

    full = thread_create(owner=owner, title="Artifacts")
    document_services.document_save(thread=full, title="Report", content=report(REPORT_CHARS))
    for n in range(ARTIFACTS):
        if n % 2:
            rows = [[f"r{r} note", r * 1.5, f"=SUM(A{r})", "2025-01-01"] for r in range(ARTIFACT_ROWS)]
            payload = {"columns": ["Name", "Value", "Note", "When"], "rows": rows}
            artifact_create(thread=full, artifact_type="data_table", title=f"Table {n}", payload=payload, turn_index=0)
        else:
            data = [{"name": f"p{r}", "a": r, "b": -r, "c": r / 3} for r in range(ARTIFACT_ROWS)]
            artifact_create(thread=full, artifact_type="line_chart", title=f"Chart {n}", payload={"data": data}, turn_index=0)

    def url(thread, fmt: str) -> str:
        return f"/threads/{thread.pk}/workspace/document/export/?format={fmt}"

    print(f"HAICO document exports bench: a {REPORT_CHARS:,}-character report, medians of {repeats}")
    rows = [
        ("report alone, DOCX", plain, "docx"),
        (f"report + {2 * LINK_LINES:,} links, DOCX", linked, "docx"),
        (f"report + {ARTIFACTS} artifacts of {ARTIFACT_ROWS:,} rows, HTML", full, "html"),
        (f"report + {ARTIFACTS} artifacts of {ARTIFACT_ROWS:,} rows, DOCX", full, "docx"),
    ]
    for label, thread, fmt in rows if repeats else ():
        print(f"  {label:48} {median_ms(client, url(thread, fmt), repeats):9.0f} ms", flush=True)
    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(client.get, url({"report": plain, "links": linked, "artifacts": full}[profile], "docx"))
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats("workspace|docx", 25)
        stats.sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", choices=("report", "links", "artifacts"))
    args = parser.parse_args()
    main(args.repeats, args.profile)
