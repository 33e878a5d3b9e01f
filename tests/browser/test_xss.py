"""Script injection, in Chromium, in every field a person or the agent fills
(docs/adr/0072: all user- and agent-written text is escaped, markdown is
rendered with a real parser and sanitised; agent artifacts are JSON, never
HTML, SVG or JS).

The payloads (tests/support/xss.py) would each call `__xss(<code>)`; every
page gets a recorder for it before its own scripts run, so a payload that
executes anywhere (on load, in a live push, in a page since left) is
reported with its field. After each step the test also checks that no
dialog opened, that the page holds no element or attribute a payload could
have made (event handlers, javascript:/data: URLs, script, iframe, svg…),
and that each payload reads as text where it was written.

The person types a few fields in the UI (the objective, a preference, a
step, the document, the chat message, feedback on a turn, a thread's new name, a model name
sent over the socket by hand); a scripted
model (the real ChatOpenAI against tests/support/openai_server.py) fills
the rest through its tools' arguments, its reasoning sentences and its
answer; what neither can write (a read-only document artifact, an unknown
artifact type, the activity log, a snapshot, the admin's rows) is seeded
through the services inside the server. The written text is then read back
where the app shows it again, among them the objective's and the document's
histories (the versions' titles and their diffs). Staff then open the admin
pages.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from tests.support import xss
from tests.support.fake_model import Reply, tool_call

from .conftest import PASSWORD
from .helpers import (
    AUTOSAVE_WAIT_MS,
    TURN_WAIT_MS,
    create_thread,
    log_in,
    model_env,
    new_thread_for,
    open_add_form,
    thread_id_from,
    wait_for_socket,
)

# An <img src=x> fails within milliseconds on a local server; give its
# onerror (and any deferred handler) time to run before looking.
SETTLE_MS = 150

RECORDER = """
window.__xss = function (code) { window.__xssReport(String(code), location.pathname); };
"""

# Elements, attributes and URL schemes a payload would need; none comes from the app itself.
AUDIT = r"""
() => {
  const problems = [];
  // Attributes that carry text as text (data-artifact-type: the type named on an artifact, read by no script;
  // data-export-title: a chart's title, which static/js/exports.js hands to Chart.js to draw on the PNG).
  const textAttributes = new Set(["title", "aria-label", "value", "placeholder", "hx-confirm", "alt", "data-artifact-type", "data-export-title"]);
  const urlAttributes = new Set(["href", "src", "action", "formaction", "xlink:href", "data", "poster", "background"]);
  const never = new Set(["iframe", "frame", "object", "embed", "base", "applet", "portal"]);
  // The admin draws its icons with inline SVG; one holding a payload was made by it.
  const onlyIfPlain = new Set(["svg", "math", "style", "link", "meta"]);
  const sameOrigin = (url) => { try { return new URL(url, location.href).origin === location.origin; } catch (e) { return false; } };
  const describe = (el) => "<" + el.tagName.toLowerCase() + (el.id ? " id=" + el.id : "") + ">";
  const visit = (root) => {
    for (const el of root.querySelectorAll("*")) {
      const tag = el.tagName.toLowerCase();
      if (never.has(tag)) problems.push("element " + describe(el));
      if (onlyIfPlain.has(tag) && el.outerHTML.includes("__xss")) problems.push("element " + describe(el) + " from a payload");
      if (tag === "img") {
        const src = el.getAttribute("src") || "";
        if (!sameOrigin(src) || !new URL(src, location.href).pathname.startsWith("/static/")) problems.push("image " + src);
      }
      if (tag === "script") {
        const src = el.getAttribute("src");
        if (src ? !sameOrigin(src) : el.type !== "application/json") problems.push("script " + (src || el.textContent.slice(0, 80)));
      }
      for (const attr of el.attributes) {
        const name = attr.name.toLowerCase();
        const value = attr.value;
        if (name.startsWith("on")) problems.push("handler " + name + " on " + describe(el));
        if (name.startsWith("hx-on") || name === "srcdoc") problems.push("attribute " + name + " on " + describe(el));
        if (urlAttributes.has(name) && /^(javascript|data|vbscript):/.test(value.replace(/[\s\x00-\x1f]/g, "").toLowerCase()))
          problems.push("URL " + name + "=" + value + " on " + describe(el));
        // A URL may carry a payload's text, percent-encoded: a markdown link's
        // path, a login form's ?next= (the page's own address), a search's ?q=.
        const webLink = urlAttributes.has(name) && /^(https?:\/\/|\/|\?)/i.test(value) && !/["'<>\s]/.test(value);
        if (value.includes("__xss") && !textAttributes.has(name) && !webLink) problems.push("payload in " + name + " on " + describe(el));
      }
      if (tag === "template") visit(el.content);
    }
  };
  visit(document);
  return problems;
}
"""


def normalised(text: str) -> str:
    return " ".join(text.split())


class Watch:
    """The payload calls and dialogs of every page of one browser context."""

    def __init__(self, page: Page):
        self.page = page
        self.calls: list[tuple[str, str]] = []
        self.dialogs: list[str] = []
        context = page.context
        context.expose_binding("__xssReport", lambda source, code, path: self.calls.append((code, path)))
        context.add_init_script(RECORDER)
        context.on("page", self._watch_dialogs)
        self._watch_dialogs(page)

    def _watch_dialogs(self, page: Page):
        def on_dialog(dialog):
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # A payload that ran usually breaks the page too; say so first.
        if exc is not None and self.calls:
            ran = "; ".join(f"{xss.describe(code)} on {path}" for code, path in self.calls)
            raise AssertionError(f"payloads executed: {ran}\n(then the test failed: {exc})") from exc

    def check(self, where: str) -> None:
        """Nothing ran, nothing opened and nothing dangerous is on the page."""
        self.page.wait_for_load_state("load")
        self.page.wait_for_timeout(SETTLE_MS)
        assert not self.calls, f"{where}: payloads executed: " + "; ".join(
            f"{xss.describe(code)} on {path}" for code, path in self.calls
        )
        assert not self.dialogs, f"{where}: dialogs opened: {self.dialogs}"
        problems = self.page.evaluate(AUDIT)
        assert not problems, f"{where}: the page holds what a payload would make: {problems[:10]}"


def expect_texts(locator, texts, where: str) -> None:
    """Each text is part of what the element shows as text (hidden parts
    included; whitespace aside: the admin shows line breaks as <br>)."""
    shown = "".join((locator.text_content() or "").split())
    missing = [t for t in texts if "".join(t.split()) not in shown]
    assert not missing, f"{where}: not shown as text: {missing[:3]} (shown: {shown[:300]!r})"


# --- the scripted agent ----------------------------------------------------------------


def agent_script() -> list[Reply]:
    reason = xss.joined("reasoning sentence")
    chart = xss.chart_payload()
    table = xss.table_payload()
    return [
        Reply(
            tool_calls=[
                tool_call("set_objective", reason, text=xss.joined("objective (agent)")),
                tool_call(
                    "add_preferences",
                    reason,
                    items=[
                        {"title": t, "subtitle": s, "kind": "hard" if i % 2 else "soft"}
                        for i, (t, s) in enumerate(
                            zip(xss.every("preference title (agent)"), xss.every("preference subtitle (agent)"))
                        )
                    ],
                ),
                tool_call("add_todos", reason, steps=[{"text": t, "depth": 0} for t in xss.every("plan step (agent)")]),
                tool_call(
                    "update_document",
                    reason,
                    title=xss.packed("document title (agent)", 200),
                    content=xss.joined("document text (agent)", "\n\n"),
                ),
            ]
        ),
        Reply(
            tool_calls=[
                tool_call(
                    "chart_generator",
                    reason,
                    chart_type="bar",
                    title=chart["title"],
                    description=chart["description"],
                    data=chart["data"],
                    x_axis_title=chart["x_axis_title"],
                    y_axis_title=chart["y_axis_title"],
                ),
                tool_call("data_table", reason, **table),
            ]
        ),
        Reply(text=xss.joined("answer", "\n\n")),
    ]


@pytest.fixture
def model_server(model_server):
    model_server.script(agent_script())
    return model_server


# --- the person's fields, the agent's, and what only the server writes ----------------------


def type_person_fields(page: Page, watch: Watch) -> None:
    planning = page.get_by_role("region", name="Planning")
    planning.get_by_role("button", name="Edit objective").click()
    planning.get_by_role("textbox", name="Objective").fill(xss.joined("objective (person)"))
    planning.locator("#panel-objective").get_by_role("button", name="Save").click()
    expect_soon(planning.locator("#objective-view"), xss.joined("objective (person)"))

    prefs = page.get_by_role("region", name="Preferences")
    form = open_add_form(page, "Preferences", "Add preference")
    form.get_by_label("Preference title").fill(xss.packed("preference title (person)", 200))
    form.get_by_label("Preference detail").fill(xss.packed("preference subtitle (person)", 500))
    form.get_by_label("Kind").select_option("hard")
    form.get_by_role("button", name="Add").click()
    expect_soon(prefs.get_by_role("list", name="Hard preferences"), xss.packed("preference title (person)", 200))

    add_step = open_add_form(page, "Planning", "Add step")
    add_step.get_by_role("textbox", name="New step").fill(xss.joined("plan step (person)"))
    add_step.get_by_role("button", name="Add step").click()
    expect_soon(planning.get_by_role("list", name="Plan steps"), xss.joined("plan step (person)"))

    document = page.get_by_role("region", name="Document")
    document.get_by_role("textbox", name="Document title").fill(xss.packed("document title (person)", 200))
    document.get_by_role("textbox", name="Document text").fill(xss.joined("document text (person)", "\n\n"))
    expect(document.locator("[data-doc-status]")).to_have_text("Saved", timeout=AUTOSAVE_WAIT_MS)
    expect_texts(page.locator("#doc-preview"), xss.markdown_text("document text (person)"), "the person's document preview")

    # The checklist view writes the plan as text in the browser.
    planning.get_by_role("button", name="Checklist").click()
    expect_texts(page.locator("#plan-markdown"), [xss.joined("plan step (person)")], "the plan checklist")
    planning.get_by_role("button", name="Tree").click()
    watch.check("after the person typed in every panel")


def expect_soon(locator, text: str) -> None:
    expect(locator).to_contain_text(normalised(text))


def check_agent_fields(page: Page, watch: Watch, where: str) -> None:
    chat = page.get_by_role("region", name="Chat")
    expect_texts(chat.locator(".bubble-user").first, [xss.joined("chat message", "\n\n")], f"{where}: the chat message")
    expect_texts(chat.locator(".reasoning-steps").first, [xss.joined("reasoning sentence")], f"{where}: the reasoning")
    assert chat.locator(".reasoning-step").count() == 6
    expect_texts(chat.locator(".answer").first, xss.markdown_text("answer"), f"{where}: the answer")
    expect_texts(page.locator("#objective-view"), [xss.joined("objective (agent)")], f"{where}: the objective")
    prefs = page.get_by_role("region", name="Preferences")
    expect_texts(prefs, xss.every("preference title (agent)") + xss.every("preference subtitle (agent)"), f"{where}: preferences")
    expect_texts(page.get_by_role("list", name="Plan steps"), xss.every("plan step (agent)"), f"{where}: the plan")
    document = page.get_by_role("region", name="Document")
    if page.locator("#panel-centre").get_attribute("data-view") == "artifact":  # the agent's last table is on show
        watch.check(f"{where}: the artifact on show")
        document.get_by_role("combobox", name="Show").select_option("")
    expect(document.get_by_role("textbox", name="Document title")).to_have_value(xss.packed("document title (agent)", 200))
    expect(document.get_by_role("textbox", name="Document text")).to_have_value(xss.joined("document text (agent)", "\n\n"))
    expect_texts(page.locator("#doc-preview"), xss.markdown_text("document text (agent)"), f"{where}: the document preview")
    watch.check(where)


def show_artifact(page: Page, label_part: str | None = None, *, pk: int | None = None):
    """Choose an artifact in the centre panel's selector, by part of its label or by id."""
    show = page.get_by_role("region", name="Document").get_by_role("combobox", name="Show")
    value = str(pk) if pk is not None else show.locator("option").filter(has_text=label_part).first.get_attribute("value")
    show.select_option(value)
    expect(page.locator("#panel-centre")).to_have_attribute("data-artifact-id", value)
    return page.locator("#panel-centre .artifact")


def check_artifacts(page: Page, watch: Watch, seeded: dict) -> None:
    chart = xss.chart_payload()
    shown = show_artifact(page, "bar chart")
    expect_texts(shown.locator(".artifact-header"), [chart["title"], chart["description"]], "the chart's title and description")
    expect_texts(
        shown.locator(".artifact-data"),
        xss.every("chart label") + chart["series"] + [chart["x_axis_title"]],
        "the chart's data table",
    )
    canvas = shown.locator("canvas")
    assert chart["title"] in canvas.get_attribute("aria-label")
    page.wait_for_function("el => window.Chart && Chart.getChart(el)", arg=canvas.element_handle())
    drawn = canvas.evaluate("el => { const c = Chart.getChart(el); return [c.data.labels, c.data.datasets.map(d => d.label)]; }")
    assert drawn == [xss.every("chart label"), chart["series"]], "Chart.js got other labels than the payloads"
    canvas.hover()  # the tooltip draws a label on the canvas
    watch.check("the chart")

    table = xss.table_payload()
    shown = show_artifact(page, "· table ·")
    expect_texts(shown, [table["title"], table["description"], *table["columns"], *table["rows"][0]], "the table")
    shown.get_by_role("button").first.click()  # sorting moves rows in the browser
    watch.check("the table, sorted")

    shown = show_artifact(page, pk=seeded["document"])
    expect_texts(
        shown, [xss.packed("document artifact title", 200), *xss.markdown_text("document artifact text")], "the document artifact"
    )
    watch.check("the document artifact")

    shown = show_artifact(page, pk=seeded["unknown"])
    expect_texts(
        shown,
        [xss.payload("unknown artifact type", 1)]
        + [json.dumps(p, ensure_ascii=False)[1:-1] for p in xss.every("unknown artifact payload")],
        "the unknown artifact's type and JSON",
    )
    watch.check("the unknown artifact")

    shown = show_artifact(page, pk=seeded["invalid"])
    expect_texts(shown, [xss.packed("chart title", 200, start=5)], "the chart its renderer refused")
    watch.check("the refused chart")


def test_no_payload_runs_in_the_workspace_chat_artifacts_or_thread_list(new_page, start_haico_server, model_server):
    server = start_haico_server(model_env(model_server))
    page = new_page()
    watch = Watch(page)
    with watch:
        url = new_thread_for(page, server.url, "ada")
        thread_id = thread_id_from(url)
        wait_for_socket(page)

        type_person_fields(page, watch)
        seeded = json.loads(
            server.manage("shell", "-c", xss.seed_command(username="ada", thread_id=thread_id)).strip().splitlines()[-1]
        )
        assert seeded["thread"].replace("-", "") == thread_id.replace("-", "")

        # The chat message starts the turn; the agent writes everywhere, live.
        chat = page.get_by_role("region", name="Chat")
        chat.get_by_role("textbox", name="Message").fill(xss.joined("chat message", "\n\n"))
        chat.get_by_role("button", name="Send").click()
        expect(chat.locator(".answer").first).to_contain_text("__xss(1500)", timeout=TURN_WAIT_MS)
        expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
        assert model_server.remaining == 0
        expect_texts(page.locator("#thread-title"), [xss.payload("chat message", 0)], "the title the message gave the thread")
        check_agent_fields(page, watch, "live, as the turn was pushed")

        # A hand-made client can name any model; the refusal names it back, as text.
        model_name = xss.packed("model name", 200)
        page.evaluate(
            "(text) => document.querySelector('[ws-connect]')['htmx-internal-data'].webSocket.socket.send(text)",
            json.dumps({"message": "hello", "model": model_name}),
        )
        expect(page.locator("#chat-notice")).to_contain_text("Unknown model")
        expect_texts(page.locator("#chat-notice"), [model_name], "the unknown model's name")
        watch.check("the unknown model's notice")

        # The same, rendered by the server for a reload.
        page.reload()
        wait_for_socket(page)
        check_agent_fields(page, watch, "after a reload")
        expect_texts(page.locator("#thread-title"), [xss.payload("chat message", 0)], "the thread title after a reload")
        assert xss.payload("chat message", 0) in page.locator("#thread-title").get_attribute("title")
        assert xss.payload("chat message", 0) in page.title()

        # Feedback on the turn: the comment listed, then in its edit form, as text.
        chat = page.get_by_role("region", name="Chat")
        chat.get_by_role("button", name="Feedback on turn 1").click()
        feedback = chat.get_by_role("region", name="Your feedback on turn 1")
        feedback.get_by_role("radio", name="1 (poor)").check()
        feedback.get_by_label("Comment (optional)").fill(xss.joined("feedback comment"))
        feedback.get_by_role("button", name="Save feedback").click()
        expect(feedback.get_by_role("status")).to_have_text("Thank you: your feedback is saved.")
        expect_texts(feedback.locator(".feedback-comment"), [xss.joined("feedback comment")], "the feedback comment")
        watch.check("the feedback comment")
        feedback.get_by_role("button", name=re.compile("^Edit feedback")).click()
        expect(feedback.get_by_label("Comment (optional)")).to_have_value(xss.joined("feedback comment"))
        watch.check("the feedback comment's edit form")
        feedback.get_by_role("button", name="Close feedback on turn 1").click()

        # Edit forms the browser builds from a row's text: they start from it, as text.
        planning = page.get_by_role("region", name="Planning")
        planning.get_by_role("list", name="Plan steps").locator(".step-text").first.dblclick()
        expect(planning.get_by_role("textbox", name="Text of step 1")).to_have_value(xss.joined("plan step (person)"))
        planning.get_by_role("textbox", name="Text of step 1").press("Escape")
        prefs = page.get_by_role("region", name="Preferences")
        prefs.get_by_role(
            "toolbar", name=f"Actions for preference {xss.payload('preference title (agent)', 1)}", exact=True
        ).get_by_role("button", name="Edit").click()
        edit = prefs.locator("form[data-edit-form=edit]:not([hidden])")
        expect(edit.get_by_role("textbox", name="Title")).to_have_value(xss.payload("preference title (agent)", 1))
        expect(edit.get_by_role("textbox", name="Detail")).to_have_value(xss.payload("preference subtitle (agent)", 1))
        planning.get_by_role("button", name="Edit objective").click()
        expect(planning.get_by_role("textbox", name="Objective")).to_have_value(xss.joined("objective (agent)"))
        watch.check("the edit forms")

        # The objective's history, newest first: the agent's, the person's, the standing one it started from.
        page.get_by_role("button", name="Objective history").click()
        history = page.get_by_role("dialog", name="Objective history")
        expect(history.locator(".history-entry")).to_have_count(3)
        expect_texts(history, [xss.joined("objective (agent)"), xss.joined("objective (person)")], "the objective history")
        watch.check("the objective history")
        page.keyboard.press("Escape")

        # The document's history: the versions' titles, and the diffs of the
        # person's and the agent's versions against the empty document (whole
        # lines added, so each payload reads whole).
        document = page.get_by_role("region", name="Document")
        document.get_by_role("button", name="History", exact=True).click()
        doc_history = page.get_by_role("region", name="Document history")
        expect(doc_history.get_by_role("heading", name="Document history")).to_be_visible()
        expect_texts(
            doc_history.get_by_role("list", name="Versions, newest first"),
            [xss.packed("document title (agent)", 200), xss.packed("document title (person)", 200)],
            "the document history's titles",
        )
        watch.check("the document history and the agent's last change")
        current = int(doc_history.get_attribute("data-current-version"))
        compare = doc_history.get_by_role("form", name="Compare two versions")
        changes = doc_history.get_by_role("region", name="Changes between versions")
        for new, field in ((current, "agent"), (current - 1, "person")):
            compare.get_by_label("From version").fill("0")
            compare.get_by_label("to version").fill(str(new))
            compare.get_by_role("button", name="Show changes").click()
            shown_to = f"now (version {new})" if new == current else f"version {new}"
            expect(changes.get_by_role("heading")).to_have_text(f"Changes from version 0 to {shown_to}")
            expect_texts(
                changes,
                [xss.packed(f"document title ({field})", 200), *xss.every(f"document text ({field})")],
                f"the diff of the {field}'s document version",
            )
            watch.check(f"the diff of the {field}'s document version")
        doc_history.get_by_role("button", name="Close history").click()

        # The activity log, loaded when opened.
        page.locator("#activity-log summary").click()
        entries = page.get_by_role("list", name="Activity log entries")
        expect(entries.locator(".activity-entry")).to_have_count(2)
        expect_texts(entries, [xss.joined("activity log message")], "the activity log")
        watch.check("the activity log")

        check_artifacts(page, watch, seeded["artifacts"])

        # The thread list, and a thread renamed there.
        page.goto(f"{server.url}/threads/")
        threads = page.get_by_role("list", name="Threads")
        expect_texts(threads, xss.every("thread title (list)"), "the thread list")
        watch.check("the thread list")
        row = threads.get_by_role("listitem").first
        row.get_by_role("button", name=re.compile("^Rename thread")).click()
        row.get_by_role("textbox", name="Thread title").fill(xss.packed("thread title (renamed)", 200))
        row.get_by_role("button", name="Save").click()
        renamed = xss.packed("thread title (renamed)", 200)
        expect(threads).to_contain_text(normalised(renamed))
        watch.check("the renamed thread")
        page.reload()
        expect_texts(threads, [renamed], "the renamed thread after a reload")
        watch.check("the thread list after a reload")


# --- the admin, as staff ---------------------------------------------------------------------

ADMIN_MODELS = [
    ("workspace", "thread"),
    ("workspace", "workspacesnapshot"),
    ("workspace", "artifact"),
    ("workspace", "document"),
    ("workspace", "objective"),
    ("workspace", "preference"),
    ("workspace", "todo"),
    ("conversations", "activitylogentry"),
    ("conversations", "feedback"),
    ("conversations", "branchlink"),
    ("conversations", "moderationaction"),
]


# The search box shows the query back; one list per app is enough for that.
SEARCHED = {"thread", "workspacesnapshot", "activitylogentry"}


def create_users_and_seed(server) -> dict:
    """ada, staff "boss" and ada's seeded workspace, in one server-side shell."""
    code = (
        "from django.contrib.auth import get_user_model; users = get_user_model().objects; "
        f"users.create_user(username='ada', password={PASSWORD!r}); "
        f"users.create_superuser(username='boss', password={PASSWORD!r}, email='boss@example.com'); "
        + xss.seed_command(username="ada", staff_username="boss", workspace=True)
    )
    return json.loads(server.manage("shell", "-c", code).strip().splitlines()[-1])


def test_no_payload_runs_in_the_admin_the_login_pages_or_an_unsent_message(new_page, haico_server):
    server = haico_server
    thread = create_users_and_seed(server)["thread"].replace("-", "")

    page = new_page()
    watch = Watch(page)
    with watch:
        # Reflected: a payload in the address, on pages anyone can open.
        query = xss.packed("search query", 500)
        for path in ("/accounts/login/", "/admin/login/", "/accounts/signup/", "/accounts/password_reset/"):
            page.goto(f"{server.url}{path}?next={query}&q={query}")
            watch.check(f"{path} with a payload in its address")

        log_in(page, server.url, "boss")
        page.goto(f"{server.url}/admin/")
        watch.check("the admin index")
        for app_label, model in ADMIN_MODELS:
            base = f"{server.url}/admin/{app_label}/{model}/"
            page.goto(base)
            expect(page.locator("#result_list")).to_be_visible()
            watch.check(f"the {model} list")
            if model in SEARCHED:
                page.goto(f"{base}?q={query}")
                watch.check(f"the {model} list searched for a payload")

        def change_page(app_label, model, pk):
            page.goto(f"{server.url}/admin/{app_label}/{model}/{pk}/change/")
            expect(page.locator("#content-main")).to_be_visible()
            watch.check(f"the {model} {pk} page")
            return page.locator("#content-main")

        title = server.query("SELECT title FROM conversations_thread WHERE id = ?", (thread,))[0][0]
        main = change_page("workspace", "thread", thread_uuid(thread))
        expect(main.get_by_role("textbox", name="Title")).to_have_value(title)
        expect_texts(main, [xss.packed("moderation detail", 500)], "the thread's moderation history")

        # The thread's read-only review: transcript, snapshot, branches, feedback, workspace.
        page.goto(f"{server.url}/admin/workspace/thread/{thread_uuid(thread)}/review/")
        review = page.locator("#content-main")
        expect(review).to_be_visible()
        watch.check("the thread's review")
        expect_texts(
            review,
            [
                xss.joined("chat message", "\n\n"),
                xss.joined("feedback comment"),
                xss.packed("branch reason", 500),
                xss.joined("objective (person)"),
            ],
            "the thread's review",
        )

        # Staff's read-only view of the workspace itself (the admin's "View on site").
        page.goto(f"{server.url}/threads/{thread_uuid(thread)}/staff-view/")
        staff_view = page.locator("main")
        expect(staff_view.get_by_text("Read-only view for staff.")).to_be_visible()
        watch.check("staff's read-only workspace view")
        expect_texts(staff_view, [xss.joined("objective (person)")], "staff's read-only workspace view")

        (snapshot,) = server.query("SELECT id FROM workspace_workspacesnapshot WHERE thread_id = ?", (thread,))
        main = change_page("workspace", "workspacesnapshot", snapshot[0])
        expect_texts(
            main,
            [xss.joined("chat message", "\n\n"), xss.joined("objective (person)"), xss.joined("document text (person)", "\n\n")],
            "the snapshot",
        )

        for (pk,) in server.query("SELECT id FROM workspace_artifact WHERE thread_id = ? ORDER BY id", (thread,)):
            change_page("workspace", "artifact", pk)
        for table, model in (
            ("workspace_document", "document"),
            ("workspace_objective", "objective"),
            ("conversations_activitylogentry", "activitylogentry"),
            ("conversations_feedback", "feedback"),
            ("conversations_moderationaction", "moderationaction"),
        ):
            for (pk,) in server.query(f"SELECT id FROM {table} WHERE thread_id = ? ORDER BY id LIMIT 1", (thread,)):
                change_page(app_label_of(model), model, pk)
        for table, model in (("workspace_preference", "preference"), ("workspace_todo", "todo")):
            for (pk,) in server.query(f"SELECT id FROM {table} WHERE thread_id = ? ORDER BY id LIMIT 2", (thread,)):
                change_page("workspace", model, pk)
        (branch,) = server.query("SELECT id FROM conversations_branchlink WHERE parent_id = ?", (thread,))
        main = change_page("conversations", "branchlink", branch[0])
        expect_texts(main, [xss.packed("branch reason", 500)], "the branch link")

        # With no model configured, a message is handed back unsent beside the notice.
        create_thread(page, server.url)
        wait_for_socket(page)
        chat = page.get_by_role("region", name="Chat")
        chat.get_by_role("textbox", name="Message").fill(xss.joined("chat message (no model)", "\n\n"))
        chat.get_by_role("button", name="Send").click()
        unsent = chat.locator(".turn-unsent")
        expect(unsent).to_contain_text("HAICO_MODEL")
        expect_texts(unsent.locator(".bubble-user"), [xss.joined("chat message (no model)", "\n\n")], "the unsent message")
        watch.check("the unsent message")


def app_label_of(model: str) -> str:
    return next(app for app, name in ADMIN_MODELS if name == model)


def thread_uuid(hex_id: str) -> str:
    return f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"
