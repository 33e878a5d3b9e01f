"""What editing a long document costs, against a short one in the same run.

The document limit is 200 000 characters (HAICO_DOCUMENT_MAX_CHARS); a
person typing in a 199 000-character document must not wait on the server
or the browser much longer than in a 2 000-character one. Each figure is
measured on both sizes in this one process, and reported with the ratio
long / short (the short document is the floor):

- save: the person's autosave through the real view (POST document/save/,
  as htmx sends it), based on the current version: written as is, its live
  push rendered (the document's patch with the preview and the review of
  the agent's last turn, which every open page gets);
- merged save: the same, based on the version before another tab's save of
  another paragraph: merged three-way (docs/adr/0013);
- merge: workspace.merge.merge_text alone on those three texts;
- preview: POST document/preview/ with text never rendered before (each
  request changes a word, so no cached render is reused);
- targeted edit: agent.tools replace_in_document, the way a turn calls it
  (based on the version the model was shown, while the person saved a
  paragraph meanwhile, so it is merged), its push rendered too;
- DOCX export: GET document/export/?format=docx, the file the person
  downloads; then, for the long report only, the same export with a
  2 000-row table among the thread's artifacts (its appendix), against the
  export without it.

Each is measured on three shapes of text: a report (headings, paragraphs,
lists, tables), the same report as one line (a merge has no lines to go
by), and that line with emoji, flags and combining accents in it (the
merge and the diff keep such characters whole, docs/adr/0128).

With --browser (Chromium and Playwright, as the browser tests use them) it
also starts the real server and types into the editor of each document:
key to handled input (the keydown's time stamp to the end of the last input
listener) and key to the next frame (a requestAnimationFrame callback after
the input, then the frame after it), p50 and p95 of --keys keys.

Run: .venv/bin/python -m bench.document_editing [--repeats 7] [--browser] [--keys 60]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import as_if_every_thread_were_open, set_up_django  # noqa: E402

set_up_django(prefix="haico-document-", database_file="document.sqlite3")

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from agent.context import Seen  # noqa: E402
from agent.tools.decorator import run_tool_call  # noqa: E402
from agent.tools.envelope import parse_envelope  # noqa: E402
from agent.tools.registry import tool_specs  # noqa: E402
from conversations.services import thread_create  # noqa: E402
from workspace import merge  # noqa: E402
from workspace.models import Document, DocumentRevision, Thread  # noqa: E402
from workspace.services import document as document_services  # noqa: E402
from workspace.services.artifacts import artifact_create  # noqa: E402

SHORT, LONG = 2_000, 199_000
WORDS = (
    "the a of to and in that is for on with as by this be are from at or an which it not have has their more "
    "results method data model analysis study design value table figure section report team plan review "
    "measure sample growth revenue customer market cost time quality risk change system process"
).split()


def markdown_document(chars: int, seed: int = 7) -> str:
    """A report of about `chars` characters: headings, paragraphs (one long
    line each, as people write markdown), lists, a table now and then."""
    rnd = random.Random(seed)

    def sentence() -> str:
        words = [rnd.choice(WORDS) for _ in range(rnd.randint(8, 18))]
        return " ".join(words).capitalize() + "."

    parts, size, section = [], 0, 0
    while size < chars:
        section += 1
        block = [f"## Section {section}: {sentence()[:-1]}", ""]
        for _ in range(rnd.randint(2, 4)):
            block += [" ".join(sentence() for _ in range(rnd.randint(3, 6))), ""]
        if section % 3 == 0:
            block += [f"- Item {section}.{i}: {sentence()}" for i in range(1, 5)] + [""]
        if section % 7 == 0:
            block += ["| Quarter | Revenue | Cost |", "|---|--:|--:|"]
            block += [f"| Q{q} {section} | {rnd.randint(100, 999)} | {rnd.randint(10, 99)} |" for q in range(1, 5)] + [""]
        text = "\n".join(block) + "\n"
        parts.append(text)
        size += len(text)
    return "".join(parts)[:chars]


def one_paragraph(chars: int) -> str:
    """The same report as one line: a long paragraph (a document pasted or
    generated without line breaks), where a merge has no lines to go by."""
    return markdown_document(chars).replace("\n", " ")


# Characters of several code points (docs/adr/0128): an emoji with its skin
# tone, a flag, a family joined by zero-width joiners, a letter with a
# combining accent; and a precomposed one and CJK, which are not.
UNICODE_WORDS = ("👍🏽", "🇫🇷", "👩\u200d👩\u200d👧", "cafe\u0301", "café", "会议纪要")


def one_paragraph_in_unicode(chars: int) -> str:
    """The one-line report with about one word in ten one of UNICODE_WORDS:
    where a merge tokenises the whole text, with many characters to keep whole."""
    rnd = random.Random(11)
    words = one_paragraph(chars).split(" ")
    return " ".join(rnd.choice(UNICODE_WORDS) if rnd.random() < 0.1 else word for word in words)[:chars]


def edit_at(text: str, fraction: float, insert: str) -> str:
    """`text` with `insert` put after the first sentence that ends at or
    after `fraction` of it."""
    at = text.find(". ", int(fraction * len(text)))
    at = len(text) if at < 0 else at + 1
    return text[:at] + insert + text[at:]


def passage_near(text: str, fraction: float) -> str:
    """Sixty characters from the sentence start at `fraction` of `text`,
    found exactly once in it (as a targeted edit needs)."""
    at = text.find(". ", int(fraction * len(text))) + 2
    while text.count(text[at : at + 60]) != 1:
        at += 60
    return text[at : at + 60]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class Bench:
    def __init__(self, owner, client: Client, document=markdown_document):
        self.owner, self.client, self.document = owner, client, document

    def thread_with(self, chars: int) -> tuple[Thread, str]:
        """A thread whose document has `chars` characters and was last changed
        by the agent's turn 1 (so every push carries that turn's review)."""
        thread = thread_create(owner=self.owner, title=f"Document of {chars}")
        text = self.document(chars)
        document_services.document_save(thread=thread, title="Report", content=text)
        Thread.objects.filter(pk=thread.pk).update(turn_index=1)
        agent_text = edit_at(text, 0.5, " The agent added this sentence in turn one.")
        document_services.document_save(thread=thread, content=agent_text, base_version=1, author=DocumentRevision.Author.AGENT)
        return thread, agent_text

    def post_save(self, thread, *, content: str, base_version: int) -> float:
        url = f"/threads/{thread.pk}/workspace/document/save/"
        start = time.perf_counter()
        response = self.client.post(
            url, {"title": "Report", "content": content, "base_version": str(base_version)}, HTTP_HX_REQUEST="true"
        )
        elapsed = time.perf_counter() - start
        assert response.status_code == 200 and b"Not saved" not in response.content, response.content[:300]
        return elapsed

    def save(self, chars: int, repeats: int) -> float:
        thread, text = self.thread_with(chars)
        samples = []
        for n in range(repeats):
            version = Document.objects.get(thread=thread).version
            text = edit_at(text, 0.2, f" Typed {n}.")
            samples.append(self.post_save(thread, content=text, base_version=version))
        return median_ms(samples)

    def merged_save(self, chars: int, repeats: int) -> float:
        thread, text = self.thread_with(chars)
        samples = []
        for n in range(repeats):
            base = Document.objects.get(thread=thread)
            # Another tab saves a paragraph near the end meanwhile...
            theirs = edit_at(base.content, 0.9, f" Another tab {n}.")
            document_services.document_save(
                thread=thread, content=theirs, base_version=base.version, author=DocumentRevision.Author.PERSON
            )
            # ...while this tab's save, based on the version before, changes one near the start.
            ours = edit_at(base.content, 0.1, f" Typed {n}.")
            samples.append(self.post_save(thread, content=ours, base_version=base.version))
            assert f" Another tab {n}." in Document.objects.get(thread=thread).content
        return median_ms(samples)

    def merge(self, chars: int, repeats: int) -> float:
        base = self.document(chars)
        samples = []
        for n in range(repeats):
            ours, theirs = edit_at(base, 0.1, f" Ours {n}."), edit_at(base, 0.9, f" Theirs {n}.")
            start = time.perf_counter()
            result = merge.merge_text(base, ours, theirs)
            samples.append(time.perf_counter() - start)
            assert result.clean
        return median_ms(samples)

    def preview(self, chars: int, repeats: int) -> float:
        thread, text = self.thread_with(chars)
        url = f"/threads/{thread.pk}/workspace/document/preview/"
        samples = []
        for n in range(repeats):
            text = edit_at(text, 0.5, f" Preview {n}.")
            start = time.perf_counter()
            response = self.client.post(url, {"content": text}, HTTP_HX_REQUEST="true")
            samples.append(time.perf_counter() - start)
            assert response.status_code == 200 and f"Preview {n}.".encode() in response.content
        return median_ms(samples)

    def targeted_edit(self, chars: int, repeats: int) -> float:
        thread, _ = self.thread_with(chars)
        spec = next(spec for spec in tool_specs() if spec.name == "replace_in_document")
        samples = []
        for n in range(repeats):
            shown = Document.objects.get(thread=thread)
            # The person saves a paragraph after the model was shown the document.
            document_services.document_save(
                thread=thread,
                content=edit_at(shown.content, 0.8, f" Person {n}."),
                base_version=shown.version,
                author=DocumentRevision.Author.PERSON,
            )
            passage = passage_near(shown.content, 0.33)
            start = time.perf_counter()
            envelope = run_tool_call(
                spec,
                thread,
                {"action_and_reasoning": "Editing one paragraph.", "old_text": passage, "new_text": passage + f" Agent {n}."},
                turn_index=1,
                seen=Seen(document_version=shown.version),
            )
            samples.append(time.perf_counter() - start)
            assert parse_envelope(envelope)["success"], envelope
        return median_ms(samples)

    def docx_export(self, chars: int, repeats: int, *, table_rows: int = 0) -> float:
        thread, _ = self.thread_with(chars)
        if table_rows:
            rows = [[f"Item {n}", n * 1.5, f"note {n}"] for n in range(table_rows)]
            artifact_create(
                thread=thread,
                artifact_type="data_table",
                title="Stock",
                turn_index=1,
                payload={"columns": ["Item", "Count", "Note"], "rows": rows},
            )
        url = f"/threads/{thread.pk}/workspace/document/export/?format=docx"
        samples = []
        for _ in range(repeats):
            start = time.perf_counter()
            response = self.client.get(url)
            samples.append(time.perf_counter() - start)
            assert response.status_code == 200 and response.content.startswith(b"PK")
        return median_ms(samples)


def browser_typing(keys: int) -> dict[int, dict[str, tuple[float, float]]]:
    """Typing in Chromium: {chars: {measure: (p50, p95) ms}} (bench.document_typing)."""
    from bench.document_typing import measure_typing

    return measure_typing(sizes=(SHORT, LONG), keys=keys, document=markdown_document)


def main(repeats: int, browser: bool, keys: int) -> None:
    call_command("migrate", verbosity=0)
    as_if_every_thread_were_open()
    owner = get_user_model().objects.create_user(username="bench", password="bench-pass-123")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)
    print(f"HAICO document editing bench: {SHORT:,} vs {LONG:,} characters, medians of {repeats}")
    print(f"  {'':34} {'short':>10} {'long':>10} {'long/short':>11}")
    shapes = (("report", markdown_document), ("one paragraph", one_paragraph), ("one paragraph, emoji", one_paragraph_in_unicode))
    for shape, document in shapes:
        bench = Bench(owner, client, document)
        rows = [
            ("save (view + push)", bench.save),
            ("merged save (view + push)", bench.merged_save),
            ("merge alone", bench.merge),
            ("preview (view)", bench.preview),
            ("targeted edit (tool + push)", bench.targeted_edit),
            ("DOCX export (view)", bench.docx_export),
        ]
        print(f"  {shape}:")
        for label, measure in rows:
            short, long = measure(SHORT, repeats), measure(LONG, repeats)
            print(f"    {label:32} {short:8.1f}ms {long:8.1f}ms {long / short:10.1f}x", flush=True)
        if shape == "report":
            alone = bench.docx_export(LONG, 3)
            with_table = bench.docx_export(LONG, 3, table_rows=2_000)
            print(
                f"    {'DOCX export + 2 000-row table':32} {'':10} {with_table:8.1f}ms "
                f"{with_table / alone:10.1f}x the export without it",
                flush=True,
            )
    if browser:
        figures = browser_typing(keys)
        print(f"  browser (report), {keys} keys typed, p50 / p95 in ms:")
        for name, label in (
            ("input", "key -> input handled"),
            ("handlers", "the page's input listeners"),
            ("frame", "key -> next frame"),
        ):
            (s50, s95), (l50, l95) = figures[SHORT][name], figures[LONG][name]
            print(f"    {label:32} {s50:5.1f}/{s95:5.1f} {l50:6.1f}/{l95:6.1f}   p95 x{l95 / max(s95, 0.1):.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--browser", action="store_true", help="also type in Chromium (needs Playwright)")
    parser.add_argument("--keys", type=int, default=60)
    args = parser.parse_args()
    main(args.repeats, args.browser, args.keys)
