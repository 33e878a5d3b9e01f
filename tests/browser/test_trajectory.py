"""The trajectory map in Chromium against the real server and a scripted
model (docs/adr/0016): two turns, open "Turn 1" on the map, "Continue from
here", send a new message; the page moves to the new branch, which starts
from the workspace after turn 1 and holds the new turn, and the original
thread is unchanged."""

import re
import time
import uuid

from playwright.sync_api import expect

from tests.support.fake_model import Reply, tool_call

from .helpers import TURN_WAIT_MS, model_env, new_thread_for, thread_id_from, wait_for_socket


def _hex(thread_id: str) -> str:
    return thread_id.replace("-", "")


# Every edge the map draws, by class, each subpath apart: the map draws all
# edges of a kind as one path, and a pushed node adds a path per edge.
DRAWN_EDGES = """() => Array.from(document.querySelectorAll("#trajectory-map svg.trajectory-edges path")).flatMap(
    (path) => path.getAttribute("d").split("M").slice(1).map((part) => path.getAttribute("class") + " M" + part))"""


def _drawn_edges(page) -> list[str]:
    return sorted(page.evaluate(DRAWN_EDGES))


def _thread_rows(server, thread_id: str) -> dict:
    ((turn_index,),) = server.query("SELECT turn_index FROM conversations_thread WHERE id = ?", (_hex(thread_id),))
    ((document,),) = server.query("SELECT content FROM workspace_document WHERE thread_id = ?", (_hex(thread_id),))
    snapshots = server.query(
        # Short texts are stored whole (workspace.content_store), so the blob's text is the document's.
        "SELECT s.turn_index, s.user_message, b.text FROM workspace_workspacesnapshot s"
        " JOIN workspace_contentblob b ON b.id = s.document_body_id WHERE s.thread_id = ? ORDER BY s.turn_index",
        (_hex(thread_id),),
    )
    return {"turn_index": turn_index, "document": document, "snapshots": [tuple(row) for row in snapshots]}


def test_continue_from_turn_one_branches_with_its_workspace_and_leaves_the_thread_as_it_was(
    new_page, start_haico_server, model_server
):
    model_server.script(
        [
            Reply(tool_calls=[tool_call("update_document", "Writing the first draft.", content="Draft after turn one.")]),
            Reply(text="Drafted."),
            Reply(tool_calls=[tool_call("update_document", "Revising the draft.", content="Draft after turn two.")]),
            Reply(text="Revised."),
            Reply(text="Branch answer."),
        ]
    )
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    original = thread_id_from(url)

    chat = page.get_by_role("region", name="Chat")
    box = chat.get_by_role("textbox", name="Message")
    for message, answers in (("Write a draft", ["Drafted."]), ("Revise it", ["Drafted.", "Revised."])):
        # A turn now ends within moments of its answer showing: wait for its end before the next message.
        expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
        box.fill(message)
        box.press("Enter")
        expect(chat.locator(".answer")).to_have_text(answers, timeout=TURN_WAIT_MS)

    trajectory = page.get_by_role("region", name="Trajectory")
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 2\b"))).to_have_attribute("aria-current", "step")
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 1\b"))).to_contain_text("Write a draft")
    # The second turn's edge came in a push: drawn once as a turn edge and once on the path, as after a reload.
    pushed = _drawn_edges(page)
    assert len(pushed) == len(set(pushed)) == 2, pushed
    page.reload()
    wait_for_socket(page)
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 2\b"))).to_have_attribute("aria-current", "step")
    assert _drawn_edges(page) == pushed
    before = _thread_rows(server, original)

    trajectory.get_by_role("button", name=re.compile(r"^Turn 1\b")).click()
    preview = page.get_by_role("region", name="Turn preview")
    expect(preview.get_by_role("status")).to_contain_text("Viewing turn 1")
    expect(preview.locator("[data-preview-document]")).to_have_text("Draft after turn one.")
    expect(preview).not_to_contain_text("Revised.")  # the chat up to turn 1 only
    assert _thread_rows(server, original) == before  # looking made nothing
    assert len(server.query("SELECT id FROM conversations_thread")) == 1

    preview.get_by_role("button", name="Continue from here").click()
    expect(preview).to_contain_text("Your next message in the chat starts a new branch from turn 1")
    expect(box).to_be_focused()
    box.fill("Take it somewhere else")
    box.press("Enter")

    page.wait_for_url(lambda address: "/workspace/" in address and thread_id_from(address) != original, timeout=TURN_WAIT_MS)
    branch = thread_id_from(page.url)
    chat = page.get_by_role("region", name="Chat")
    expect(chat.locator(".answer")).to_have_text(["Drafted.", "Branch answer."], timeout=TURN_WAIT_MS)
    trajectory = page.get_by_role("region", name="Trajectory")
    # The branch's map: the original's two turns, and the branch's turn 2 hanging off turn 1, current.
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 2\b"))).to_have_count(2)
    expect(trajectory.locator(".tnode[aria-current]")).to_contain_text("Take it somewhere else")

    rows = _thread_rows(server, branch)
    assert rows["turn_index"] == 2
    assert rows["document"] == "Draft after turn one."
    assert rows["snapshots"] == [(2, "Take it somewhere else", "Draft after turn one.")]
    assert _thread_rows(server, original) == before


SEED_LONG_THREAD = (
    "from conversations.turns import slot; from workspace.models import Thread; "
    "thread = Thread.objects.get(pk='{thread_id}'); "
    "[slot.turn_finish(thread=thread, turn_index=slot.turn_begin(thread=thread, user_message=f'Message number {{i}}')[0]) "
    "for i in range(1, 201)]"
)


def test_a_map_of_200_turns_scrolls_and_shows_the_current_turn(new_page, start_haico_server):
    server = start_haico_server()
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    server.manage("shell", "-c", SEED_LONG_THREAD.format(thread_id=uuid.UUID(thread_id_from(url))))
    page.goto(url)

    trajectory = page.get_by_role("region", name="Trajectory")
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn \d+ "))).to_have_count(200)
    current = trajectory.get_by_role("button", name=re.compile(r"^Turn 200\b"))
    expect(current).to_have_attribute("aria-current", "step")
    expect(current).to_be_in_viewport()
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 1\b"))).not_to_be_in_viewport()
    box = page.locator("#trajectory-scroll")
    assert box.evaluate("el => el.scrollHeight > el.clientHeight && el.scrollTop > 0")
    # The region stays its size: the page itself does not grow with the map.
    assert page.evaluate("() => document.documentElement.scrollHeight <= window.innerHeight + 1")


def _held_reply(gates):
    """The model's answers: turn 1 and 2 at once; a branch's ("Go north",
    "Go south") once the test opens its gate."""

    def reply(body):
        last = [m for m in body["messages"] if m.get("role") == "user"][-1]["content"]
        for name, gate in gates.items():
            if f"Go {name}" in str(last):
                assert gate.wait(TURN_WAIT_MS / 1000)
                return Reply(text=f"Answer going {name}.")
        return Reply(text="Second answer." if "Second" in str(last) else "First answer.")

    return reply


def _continue_from_turn_one(page, text):
    page.get_by_role("region", name="Trajectory").get_by_role("button", name=re.compile(r"^Turn 1\b")).click()
    preview = page.get_by_role("region", name="Turn preview")
    preview.get_by_role("button", name="Continue from here").click()
    expect(preview).to_contain_text("Your next message in the chat starts a new branch from turn 1")
    box = page.get_by_role("region", name="Chat").get_by_role("textbox", name="Message")
    box.fill(text)
    box.press("Enter")


def _held_until_released(page, pattern, *, fetch_first=False):
    """Requests of `page` to `pattern` are held (in the list returned) until
    the test lets each go; `fetch_first`: the first one's response is
    fetched from the server at once (as the server renders it now) and only
    its arrival is held, the later ones go through."""
    held = []

    def hold(route):
        if fetch_first and held:
            route.continue_()
            return
        held.append((route, route.fetch() if fetch_first else None))

    page.route(pattern, hold)
    return held


def _wait_for(page, held):
    deadline = time.monotonic() + TURN_WAIT_MS / 1000
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # Playwright's own wait: the route handlers run meanwhile
    assert held, "the request was not made"


def test_a_branch_whose_turn_ends_before_a_new_pages_socket_joins_is_on_that_pages_map(
    new_page, start_haico_server, model_server
):
    """Two tabs continue from turn 1 at about the same time. The second tab's
    new branch page is built while the first branch's turn still runs, and
    its socket joins only after that turn has ended (its node's push went to
    the pages already joined), while its own turn still runs: the page is
    told what its map should show once it has joined, and fetches it. That
    fetch is held until the page's own turn has ended and its node been
    pushed: what the fetch brings does not take that node off. Both
    branches are on the map without a reload (docs/adr/0156)."""
    import threading

    gates = {"north": threading.Event(), "south": threading.Event()}
    model_server.script([_held_reply(gates)] * 6)
    server = start_haico_server(model_env(model_server))
    first = new_page()
    url = new_thread_for(first, server.url, "ada")
    original = thread_id_from(url)
    wait_for_socket(first)
    chat = first.get_by_role("region", name="Chat")
    for message, answers in (("First message", ["First answer."]), ("Second message", ["First answer.", "Second answer."])):
        expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
        chat.get_by_role("textbox", name="Message").fill(message)
        chat.get_by_role("textbox", name="Message").press("Enter")
        expect(chat.locator(".answer")).to_have_text(answers, timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
    second = first.context.new_page()
    second.goto(url)
    wait_for_socket(second)

    def moved(page):
        page.wait_for_url(
            lambda address: "/workspace/" in address and thread_id_from(address) != original,
            wait_until="commit",
            timeout=TURN_WAIT_MS,
        )

    # The first tab's branch: its turn runs (held at the model).
    _continue_from_turn_one(first, "Go north")
    moved(first)
    wait_for_socket(first)
    # The second tab's branch page is built now, without north's turn 2; its
    # socket waits for its script.
    socket_script = _held_until_released(second, "**/hx-ws-2*.js")
    _continue_from_turn_one(second, "Go south")
    moved(second)
    _wait_for(second, socket_script)

    # North's turn ends while the second tab's page has not joined.
    gates["north"].set()
    first_chat = first.get_by_role("region", name="Chat")
    expect(first_chat.locator(".answer")).to_have_text(["First answer.", "Answer going north."], timeout=TURN_WAIT_MS)
    map_fetch = _held_until_released(second, re.compile(r"/threads/[0-9a-f-]+/trajectory/$"), fetch_first=True)
    socket_script[0][0].continue_()
    wait_for_socket(second)
    _wait_for(second, map_fetch)  # the page asked for its map: rendered now, with north's turn 2 and not south's

    # South's turn ends (its node pushed) while that map is on its way.
    gates["south"].set()
    second_chat = second.get_by_role("region", name="Chat")
    expect(second_chat.locator(".answer")).to_have_text(["First answer.", "Answer going south."], timeout=TURN_WAIT_MS)
    route, response = map_fetch[0]
    route.fulfill(response=response)

    # Without a reload: the original's turn 2 and each branch's, on both tabs.
    for page in (second, first):
        trajectory = page.get_by_role("region", name="Trajectory")
        expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 2\b"))).to_have_count(3, timeout=TURN_WAIT_MS)
        for name in ("north", "south"):
            expect(trajectory.get_by_role("button", name=re.compile(rf"^Turn 2 Go {name}"))).to_have_count(1)


def test_a_thread_deleted_from_the_list_leaves_the_map_of_its_branchs_open_tab(new_page, start_haico_server, model_server):
    """The owner has a branch open and deletes, from the thread list in
    another tab, the thread it came from: the branch's map drops the
    deleted thread's lane without a reload, and draws the turn the branch
    came with as its own (docs/adr/0159). Before, it kept the lane until a
    turn of the family ended, or a reload."""
    model_server.script([Reply(text="First answer."), Reply(text="Answer going north.")])
    server = start_haico_server(model_env(model_server))
    page = new_page()
    url = new_thread_for(page, server.url, "ada")
    wait_for_socket(page)
    chat = page.get_by_role("region", name="Chat")
    chat.get_by_role("textbox", name="Message").fill("First message")
    chat.get_by_role("textbox", name="Message").press("Enter")
    expect(chat.locator(".answer")).to_have_text(["First answer."], timeout=TURN_WAIT_MS)
    expect(chat.get_by_role("button", name="Send")).to_be_enabled(timeout=TURN_WAIT_MS)
    _continue_from_turn_one(page, "Go north")
    page.wait_for_url(lambda address: "/workspace/" in address and thread_id_from(address) != thread_id_from(url))
    expect(chat.locator(".answer")).to_have_text(["First answer.", "Answer going north."], timeout=TURN_WAIT_MS)
    wait_for_socket(page)
    lanes = page.locator("#trajectory-map .tnode")
    expect(lanes).to_have_count(2)
    layout = page.locator("#trajectory-map").get_attribute("data-layout")

    thread_list = page.context.new_page()
    thread_list.goto(f"{server.url}/threads/")
    thread_list.once("dialog", lambda dialog: dialog.accept())
    thread_list.get_by_role("button", name="Delete thread First message", exact=True).click()
    expect(thread_list.get_by_role("button", name="Delete thread First message", exact=True)).to_have_count(0)

    # One lane now, the branch's own: its turn 1 (run in the deleted thread) and its turn 2.
    expect(page.locator("#trajectory-map")).not_to_have_attribute("data-layout", layout, timeout=TURN_WAIT_MS)
    trajectory = page.get_by_role("region", name="Trajectory")
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 1\b"))).to_have_count(1)
    expect(trajectory.get_by_role("button", name=re.compile(r"^Turn 2 Go north"))).to_have_count(1)
    lane_of = "(node) => node.getAttribute('data-lane')"
    assert len({node.evaluate(lane_of) for node in lanes.all()}) == 1
