"""Typing in the document editor of the real page, in Chromium: how long a
key takes to be handled, and to reach the screen, for documents of given sizes.

Used by bench.document_editing --browser. It starts the real server
(`manage.py runserver`, daphne, as `./dev serve` does) on a temporary SQLite
database, saves each document through the service, opens the workspace in
headless Chromium (the Debian binary, through Playwright, as the browser
tests do) and types into the middle of the text, one key at a time with a
pause between keys (a steady typist, not a burst).

What the page records for every key (a script installed before the page's
own, so its keydown listener runs first and its input listener, on window,
last):
- key -> input handled: from the keydown event's time stamp to the end of
  the last input listener (document_editor.js's included): the browser's own work on
  the text, then the page's;
- input listeners: the page's part alone, from the first input listener
  (ours, capturing on window) to the last;
- key -> next frame: to the first task after the next animation frame,
  i.e. after the frame that shows the key has been produced.
Each is also left in the page as a performance.measure entry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.support.ports import free_port

BASE_DIR = Path(__file__).resolve().parent.parent
PASSWORD = "bench-typing-pass-123"

RECORDER = """
(() => {
  const samples = window.__typing = [];
  let started = null, listening = null;
  window.addEventListener("keydown", (event) => { started = event.timeStamp; }, true);
  window.addEventListener("input", () => { listening = performance.now(); }, true);
  window.addEventListener("input", () => {
    if (started === null) return;
    const key = started, handled = performance.now();
    started = null;
    const sample = { input: handled - key, handlers: handled - listening, frame: null };
    samples.push(sample);
    performance.measure("key-to-input", { start: key, end: handled });
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => {
        const shown = performance.now();
        sample.frame = shown - key;
        performance.measure("key-to-frame", { start: key, end: shown });
      };
      channel.port2.postMessage(null);
    });
  });
})();
"""


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


class _Server:
    def __init__(self):
        self.dir = Path(tempfile.mkdtemp(prefix="haico-typing-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DATABASE_URL", "REDIS_URL"))},
            "DJANGO_SETTINGS_MODULE": "haico_site.settings",
            "DATABASE_URL": f"sqlite:///{self.dir / 'db.sqlite3'}",
            "DEBUG": "True",
            "HAICO_MODEL": "",
            "OPENAI_API_KEY": "",
            "HAICO_LOG_LEVEL": "WARNING",
        }
        self.process = None

    def manage(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=BASE_DIR,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        return done.stdout

    def start(self) -> None:
        self.manage("migrate", "--noinput")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"],
            cwd=BASE_DIR,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/accounts/login/", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


SETUP = """
from django.contrib.auth import get_user_model
from conversations.services import thread_create
from workspace.services import document as document_services
owner = get_user_model().objects.create_user(username="typist", password={password!r})
for chars, path in {documents!r}:
    thread = thread_create(owner=owner, title=f"{{chars}} characters")
    document_services.document_save(thread=thread, title="Report", content=open(path).read())
    print(chars, thread.pk)
"""


def measure_typing(
    *, sizes, keys: int, document, pause_ms: int = 150, prepare: str = ""
) -> dict[int, dict[str, tuple[float, float]]]:
    """{chars: {"input" | "handlers" | "frame": (p50, p95) in ms}}."""
    from playwright.sync_api import sync_playwright

    server = _Server()
    try:
        server.start()
        documents = []
        for chars in sizes:
            path = server.dir / f"doc-{chars}.md"
            path.write_text(document(chars))
            documents.append((chars, str(path)))
        out = server.manage("shell", "--verbosity", "0", stdin=SETUP.format(password=PASSWORD, documents=documents))
        threads = dict(line.split() for line in out.strip().splitlines() if line[:1].isdigit())
        figures = {}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                # The headless build first, as the browser tests and CI have it.
                executable_path=next(
                    filter(None, map(shutil.which, ("chromium-headless-shell", "chromium", "chromium-browser"))),
                    "/usr/bin/chromium",
                ),
                headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
            )
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto(f"{server.url}/accounts/login/")
            page.get_by_label("Username").fill("typist")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url("**/threads/**")
            page.add_init_script(RECORDER)
            for chars in sizes:
                page.goto(f"{server.url}/threads/{threads[str(chars)]}/workspace/")
                editor = page.get_by_role("textbox", name="Document text")
                if prepare:
                    editor.evaluate(prepare)
                editor.click()
                editor.evaluate(
                    "el => { const at = el.value.indexOf('\\n', el.value.length >> 1); el.setSelectionRange(at, at); }"
                )
                page.wait_for_timeout(1000)
                page.evaluate("() => { window.__typing.length = 0; }")
                text = ("typing in the middle " * (keys // 20 + 1))[:keys]
                for key in text:
                    page.keyboard.type(key)
                    page.wait_for_timeout(pause_ms)
                page.wait_for_timeout(500)
                samples = page.evaluate("() => window.__typing")
                figures[chars] = {}
                for name in ("input", "handlers", "frame"):
                    values = [s[name] for s in samples if s[name] is not None]
                    figures[chars][name] = (_percentile(values, 50), _percentile(values, 95))
                # Let the last save settle before the next page (a refused one asks before leaving).
                page.wait_for_function(
                    "() => { const status = document.querySelector('[data-doc-status]');"
                    " return !status || !/Unsaved|Saving/.test(status.textContent); }",
                    timeout=60_000,
                )
            browser.close()
        return figures
    finally:
        server.stop()
