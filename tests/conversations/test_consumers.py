"""The thread WebSocket: who may connect, what a turn sends, what is stored."""

import json
import re

import pytest
from channels.db import database_sync_to_async

from conversations.models import ActivityLogEntry, Turn
from conversations.services import thread_create, thread_set_mode, thread_soft_delete
from conversations.sharing import thread_member_add
from conversations.turns import registry
from tests.support.fake_model import Reply, tool_call
from tests.support.requests import as_another_request
from workspace.models import Artifact, Preference, Thread, Todo, WorkspaceSnapshot

from .helpers import frame_containing, frames_until_turn_end, open_socket, stored_slot

pytestmark = pytest.mark.django_db(transaction=True)

TOOL_NAMES = ("add_preferences", "add_todos", "chart_generator")
CHART_SCRIPT = [
    Reply(
        tool_calls=[
            tool_call(
                "add_preferences", "Noting that you want British English.", items=[{"title": "British English", "kind": "hard"}]
            ),
            tool_call(
                "add_todos",
                "Laying out the two steps of the comparison.",
                steps=[{"text": "Collect Q1 and Q2 figures", "depth": 0}, {"text": "Draw the chart", "depth": 0}],
            ),
        ]
    ),
    Reply(
        text="Let me draw it.",
        tool_calls=[
            tool_call(
                "chart_generator",
                "Drawing a bar chart of the Q1 vs Q2 revenue figures.",
                chart_type="bar",
                title="Q1 vs Q2 Revenue",
                data=[{"name": "Q1", "value": 120}, {"name": "Q2", "value": 180}],
                y_axis_title="Revenue",
            )
        ],
    ),
    Reply(text="Here is the chart: **Q2** is 50% higher than Q1."),
]


def _send(message, model=None):
    body = {"message": message, "HEADERS": {"HX-Request": "true"}}
    if model is not None:
        body["model"] = model
    return json.dumps(body)


def _index(frames, needle):
    for i, html in enumerate(frames):
        if needle in html:
            return i
    raise AssertionError(f"{needle!r} not in any fragment")


@database_sync_to_async
def _db(thread):
    thread = Thread.objects.get(pk=thread.pk)
    return {
        "turn_index": thread.turn_index,
        "running": stored_slot(thread).turn_index,
        "title": thread.title,
        "snapshots": list(WorkspaceSnapshot.objects.filter(thread=thread).values_list("turn_index", "user_message")),
        "artifacts": list(Artifact.objects.filter(thread=thread).values_list("pk", "artifact_type", "turn_index")),
        "preferences": list(Preference.objects.filter(thread=thread).values_list("title", flat=True)),
        "todos": list(Todo.objects.filter(thread=thread).values_list("text", flat=True)),
    }


async def test_full_turn_streams_fragments_in_order_and_stores_the_turn(owner, thread, script, sockets):
    script(*CHART_SCRIPT)
    socket = await sockets(thread.pk, owner)

    await socket.send_to(text_data=_send("chart Q1 vs Q2 revenue: 120, 180"))
    frames = await frames_until_turn_end(socket)

    # Fragments may share a frame (the live layer batches them): their order in the stream counts.
    stream = "".join(frames)
    order = [
        stream.index("chart Q1 vs Q2 revenue: 120, 180"),  # the user bubble
        stream.index("Noting that you want British English."),
        stream.index('data-live-patch="preferences"'),  # the rows the tool changed, not the panel
        stream.index('data-live-patch="plan"'),
        stream.index("Drawing a bar chart of the Q1 vs Q2 revenue figures."),
        stream.index('id="panel-centre"'),
        stream.index('hx-swap-oob="beforeend">Here'),  # first streamed token of the answer
        stream.index("<strong>Q2</strong>"),  # the final answer, as markdown
    ]
    assert order == sorted(order)
    order = [_index(frames, 'id="panel-centre"'), _index(frames, "<strong>Q2</strong>")]
    assert 'id="panel-preferences"' not in stream and 'id="panel-plan"' not in stream
    assert is_last_frame_the_end(frames)
    assert 'aria-label="Internal reasoning"' in stream
    centre = frames[order[0]]
    assert "Q1 vs Q2 Revenue" in centre and 'hx-swap-oob="true"' in centre
    # The reasoning container is collapsed once the turn is over.
    closing = frames[-1]
    assert re.search(r'<details id="turn-1-reasoning"[^>]*hx-swap-oob="true"', closing)
    assert " open" not in re.search(r"<details id=\"turn-1-reasoning\"[^>]*>", closing).group(0)
    # The preamble "Let me draw it." streamed, then was cleared when its tool
    # call arrived (the two may share the last frame, under load).
    preamble = stream.index("Let me draw it.")
    cleared = stream.index('<div id="turn-1-answer-content" class="bubble-text answer is-streaming" hx-swap-oob="true"></div>')
    final = stream.rindex('<div id="turn-1-answer-content" class="bubble-text answer" hx-swap-oob="true">')
    assert preamble < cleared < final and "Let me draw it." not in stream[cleared:]

    stored = await _db(thread)
    assert stored["turn_index"] == 1 and stored["running"] is None
    assert stored["snapshots"] == [(1, "chart Q1 vs Q2 revenue: 120, 180")]
    assert stored["title"] == "Lit review"  # an explicit title is kept
    assert [(t, turn) for _pk, t, turn in stored["artifacts"]] == [("bar_chart", 1)]
    assert f'data-artifact-id="{stored["artifacts"][0][0]}"' in centre or str(stored["artifacts"][0][0]) in centre
    assert stored["preferences"] == ["British English"]
    assert stored["todos"] == ["Collect Q1 and Q2 figures", "Draw the chart"]


def is_last_frame_the_end(frames):
    return (
        'data-state="idle"' in frames[-1]
        and 'id="chat-send"' in frames[-1]
        and "disabled" not in frames[-1].split('id="chat-send"')[1].split(">")[0]
    )


async def test_no_fragment_shows_tool_names_arguments_or_results(owner, thread, script, sockets):
    script(*CHART_SCRIPT)
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("chart Q1 vs Q2 revenue: 120, 180"))
    frames = await frames_until_turn_end(socket)
    everything = "\n".join(frames)
    for name in TOOL_NAMES:
        assert name not in everything
    assert "action_and_reasoning" not in everything
    assert '"success"' not in everything and "chart_type" not in everything


async def test_every_socket_of_the_thread_sees_the_turn_and_other_threads_see_nothing(owner, thread, script, sockets):
    script(*CHART_SCRIPT)
    other_thread = await database_sync_to_async(thread_create)(owner=owner, title="Elsewhere")
    first = await sockets(thread.pk, owner)
    second = await sockets(thread.pk, owner)
    elsewhere = await sockets(other_thread.pk, owner)

    await first.send_to(text_data=_send("chart Q1 vs Q2 revenue: 120, 180"))
    seen_by_first = await frames_until_turn_end(first)
    seen_by_second = await frames_until_turn_end(second)

    # The sender alone also gets the acknowledgement that clears its composer.
    assert [f for f in seen_by_first if 'id="chat-ack"' not in f] == seen_by_second
    assert any('id="chat-ack" data-turn="1"' in f for f in seen_by_first)
    assert not any('id="chat-ack"' in f for f in seen_by_second)
    assert await elsewhere.receive_nothing(timeout=0.3)


async def test_the_first_message_titles_the_thread_in_every_tab(owner, script, sockets):
    script(Reply(text="ok"))
    fresh = await database_sync_to_async(thread_create)(owner=owner)
    socket = await sockets(fresh.pk, owner)
    await socket.send_to(text_data=_send("Compare <Q1> and Q2 revenue"))
    frames = await frames_until_turn_end(socket)
    title = next(f for f in frames if 'id="thread-title"' in f)
    assert 'title="Compare &lt;Q1&gt; and Q2 revenue" hx-swap-oob="true">Compare &lt;Q1&gt; and Q2 revenue</h1>' in title
    assert (await _db(fresh))["title"] == "Compare <Q1> and Q2 revenue"


async def test_a_page_opened_mid_turn_receives_the_rest_of_it(owner, thread, script, sockets):
    script(Reply(text="one two three four five six", token_delay=0.1))
    first = await sockets(thread.pk, owner)
    await first.send_to(text_data=_send("count slowly"))
    await frame_containing(first, 'hx-swap-oob="beforeend">one')

    late = await sockets(thread.pk, owner)
    frames = await frames_until_turn_end(late)
    assert "<p>one two three four five six</p>" in frames[-1]
    assert any("six" in f and "beforeend" in f for f in frames)
    # What streamed before the page joined is sent to it once, as a whole.
    resync = next(f for f in frames if 'id="turn-1-answer-content"' in f and "beforeend" not in f)
    assert ">one" in resync and frames.index(resync) < len(frames) - 1
    assert sum(">one<" in f or ">one " in f for f in frames if "beforeend" in f) == 0


async def test_another_users_thread_is_refused_with_a_reason(other_user, thread, script):
    socket = await open_socket(thread.pk, other_user)
    try:
        notice = await socket.receive_from()
        assert "does not exist or is not yours" in notice
        closed = await socket.receive_output()
        assert closed == {"type": "websocket.close", "code": 4404}
    finally:
        await socket.disconnect()
    stored = await _db(thread)
    assert stored["turn_index"] == 0 and stored["snapshots"] == []


async def test_a_deleted_thread_is_refused(owner, thread, script):
    await database_sync_to_async(thread_soft_delete)(thread=thread)
    socket = await open_socket(thread.pk, owner)
    try:
        assert "does not exist or is not yours" in await socket.receive_from()
        assert (await socket.receive_output())["code"] == 4404
    finally:
        await socket.disconnect()


async def test_a_page_opens_its_socket_as_the_person_it_was_rendered_for(owner, thread, script):
    socket = await open_socket(thread.pk, owner, query=f"person={owner.pk}")
    try:
        await socket.send_to(text_data=_send("Hello there"))
        frames = await frames_until_turn_end(socket)
        assert any("Hello there" in frame for frame in frames)
    finally:
        await socket.disconnect()


async def test_an_owners_page_reopening_its_socket_with_someone_else_signed_in_is_refused(owner, other_user, thread, script):
    # Another person with access to the thread (an editor) signed in in the
    # same browser since the owner's page was rendered.
    await database_sync_to_async(thread_member_add)(thread=thread, who=other_user.username, role="editor", by=owner)
    socket = await open_socket(thread.pk, other_user, query=f"person={owner.pk}")
    try:
        assert "signed in as someone else" in await socket.receive_from()
        assert (await socket.receive_output())["code"] == 4409
    finally:
        await socket.disconnect()
    stored = await _db(thread)
    assert stored["turn_index"] == 0


async def test_anonymous_socket_is_refused(thread, script):
    socket = await open_socket(thread.pk, None)
    try:
        assert "log in" in await socket.receive_from()
        assert (await socket.receive_output())["code"] == 4401
    finally:
        await socket.disconnect()


async def test_a_thread_deleted_while_open_refuses_the_next_message(owner, thread, script, sockets):
    script(Reply(text="never"))
    socket = await sockets(thread.pk, owner)
    await database_sync_to_async(thread_soft_delete)(thread=thread)
    # Every open tab hears of it at once.
    assert "This thread was deleted." in await socket.receive_from()
    await socket.send_to(text_data=_send("hello"))
    assert "does not exist or is not yours" in await socket.receive_from()
    assert (await socket.receive_output())["code"] == 4404
    assert (await _db(thread))["snapshots"] == []


async def test_a_second_message_while_a_turn_runs_is_refused_and_not_stored(owner, thread, script, sockets):
    script(Reply(text="a slow answer that takes a while", token_delay=0.1))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("first"))
    await frame_containing(socket, 'hx-swap-oob="beforeend">a')

    await socket.send_to(text_data=_send("second"))
    frames = await frame_containing(socket, 'id="chat-notice"')
    notice = next(f for f in frames if 'id="chat-notice"' in f and "A turn is running" in f)
    # The owner has no full name: the username names them.
    assert "A turn is running (started by owner)" in notice

    await frames_until_turn_end(socket)
    stored = await _db(thread)
    assert stored["snapshots"] == [(1, "first")]
    assert stored["turn_index"] == 1


@pytest.mark.parametrize(
    "payload, expected",
    [
        (json.dumps({"message": ""}), "Message cannot be empty."),
        (json.dumps({"message": "   \n "}), "Message cannot be empty."),
        (json.dumps({"message": 42}), "Message must be text."),
        (json.dumps({"message": "x" * 51}), "Message is too long (51 characters; the limit is 50)."),
        (json.dumps({"message": "a\u0000b"}), "Message cannot contain NUL characters."),
        (json.dumps({"message": "hello", "model": "gpt-imaginary"}), "Unknown model"),
        ("{not json", "could not be read"),
        (json.dumps(["hello"]), "could not be read"),
        (json.dumps({"action": "explode"}), "Unknown action"),
        (json.dumps({"action": "alive", "turn": 1}), "Unknown action"),
        (json.dumps({"action": ["alive"]}), "Unknown action"),
        (json.dumps({"message": "a\ud800b"}), "Message contains a character that cannot be stored"),
        (json.dumps({"message": "hello", "model": "gpt\udfff"}), "Unknown model \u201cgpt\ufffd\u201d"),
        ("[" * 100_000, "could not be read"),
        ('{"message": ' + "[" * 5_000 + "]" * 5_000 + "}", "could not be read"),
        (json.dumps({"message": [[["deep"]]], "model": {"a": 1}}), "Message must be text."),
    ],
    ids=[
        "empty",
        "whitespace",
        "not-text",
        "too-long",
        "nul-character",
        "unknown-model",
        "malformed-json",
        "not-an-object",
        "unknown-action",
        "alive-check-with-more",
        "alive-check-not-text",
        "lone-surrogate",
        "lone-surrogate-echoed",
        "nested-array",
        "nested-message",
        "wrong-types",
    ],
)
async def test_bad_input_gets_a_clear_error_and_nothing_is_stored(owner, thread, script, sockets, settings, payload, expected):
    settings.HAICO_MESSAGE_MAX_CHARS = 50
    script(Reply(text="must not run"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=payload)
    html = await socket.receive_from()
    assert 'id="chat-notice"' in html and expected in html
    html.encode("utf-8")  # a frame the server can send
    assert await socket.receive_nothing(timeout=0.2)
    stored = await _db(thread)
    assert stored["turn_index"] == 0 and stored["snapshots"] == [] and stored["running"] is None
    assert script.model.requests == []


async def test_the_pages_liveness_check_is_answered_at_once_without_the_database(owner, thread, sockets, monkeypatch):
    """The page asks whether its socket still reaches the server (a network
    can drop it with no close frame, docs/adr/0157): the answer is a frame
    the page knows, sent without the session's check or any database work."""
    socket = await sockets(thread.pk, owner)

    def no_database(**_kwargs):
        raise AssertionError("the liveness check went to the database")

    monkeypatch.setattr("conversations.consumers.session_signs_in", no_database)
    for _ in range(3):
        await socket.send_to(text_data=json.dumps({"action": "alive"}))
        assert await socket.receive_from(timeout=1) == "<!-- alive -->"
    assert await socket.receive_nothing(timeout=0.2)


async def test_the_chosen_model_is_used_for_the_turn(owner, thread, script, sockets):
    script(Reply(text="ok"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("hi", model="env:scripted-other"))
    await frames_until_turn_end(socket)
    assert script.model_names == ["scripted-other"]
    assert await database_sync_to_async(lambda: Turn.objects.get(thread=thread).model_name)() == "env:scripted-other"


@pytest.fixture
def lab_models(owner, other_user):
    """A catalogue provider with a model for everyone and one only for the owner."""
    from agent.models import CatalogueModel, Provider

    lab = Provider.objects.create(name="Lab", base_url="http://127.0.0.1:9/v1", api_key="sk-lab-key-0123456789")
    shared = CatalogueModel.objects.create(provider=lab, name="lab-shared", label="Shared")
    private = CatalogueModel.objects.create(provider=lab, name="lab-private", label="Private", everyone=False)
    private.people.add(owner)
    return {"shared": f"catalogue:{shared.pk}", "private": f"catalogue:{private.pk}"}


async def test_a_catalogue_model_offered_to_you_runs_your_turn_at_its_provider(owner, thread, script, sockets, lab_models):
    script(Reply(text="ok"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("hi", model=lab_models["private"]))
    await frames_until_turn_end(socket)
    [choice] = script.choices
    assert (choice.key, choice.model, choice.provider_name) == (lab_models["private"], "lab-private", "Lab")


async def test_a_model_not_offered_to_you_is_refused_on_the_socket_and_nothing_is_stored(other_user, script, sockets, lab_models):
    """The page offers it only to whom it is offered; a hand-made frame
    naming it is refused like an unknown model."""
    theirs = await database_sync_to_async(Thread.objects.create)(owner=other_user, title="Theirs")
    script(Reply(text="must not run"))
    socket = await sockets(theirs.pk, other_user)
    await socket.send_to(text_data=_send("hi", model=lab_models["private"]))
    html = await socket.receive_from()
    # Neither its key nor its label: it was never theirs to see.
    notice = html.split('id="chat-notice"', 1)[1]
    assert "The model you chose is no longer offered" in notice and lab_models["private"] not in notice
    assert "Private (Lab)" not in html
    assert await socket.receive_nothing(timeout=0.2)
    stored = await _db(theirs)
    assert stored["turn_index"] == 0 and stored["snapshots"] == []
    assert script.model.requests == []
    # The one offered to everyone runs.
    await socket.send_to(text_data=_send("hi", model=lab_models["shared"]))
    await frames_until_turn_end(socket)
    assert [c.key for c in script.choices] == [lab_models["shared"]]


@pytest.mark.parametrize("how", ["model disabled", "provider disabled", "model deleted"])
async def test_a_model_staff_took_away_since_the_page_loaded_is_named_as_the_owner_saw_it_and_nothing_is_stored(
    owner, thread, script, sockets, lab_models, how
):
    """The notice names the model by its label in the selector (never
    `catalogue:<id>`, nor a list of every label) and says what to do; the
    message is not stored, so the text stays in the box."""
    from agent.models import CatalogueModel, Provider

    script(Reply(text="must not run"))
    socket = await sockets(thread.pk, owner)

    def take_away():
        if how == "model disabled":
            CatalogueModel.objects.filter(name="lab-private").update(enabled=False)
        elif how == "provider disabled":
            Provider.objects.filter(name="Lab").update(enabled=False)
        else:
            CatalogueModel.objects.filter(name="lab-private").delete()

    await database_sync_to_async(take_away)()
    await socket.send_to(text_data=_send("summarise the plan", model=lab_models["private"]))
    html = await socket.receive_from()
    notice = html.split('id="chat-notice"', 1)[1]
    assert lab_models["private"] not in notice and "Shared (Lab)" not in notice
    named = "The model you chose" if how == "model deleted" else "“Private (Lab)”"
    assert f"{named} is no longer offered. Choose another model in the Model selector" in notice
    assert "your message is still in the box" in notice
    assert (await _db(thread))["turn_index"] == 0 and script.model.requests == []


async def test_a_model_taken_from_you_meanwhile_falls_back_to_your_default_on_retry(owner, thread, script, sockets, lab_models):
    from agent.models import CatalogueModel

    script(Reply(text="ok"), Reply(text="again"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("hi", model=lab_models["private"]))
    await frames_until_turn_end(socket)
    await database_sync_to_async(Turn.objects.filter(thread=thread).update)(status=Turn.Status.FAILED)
    await database_sync_to_async(CatalogueModel.objects.filter(name="lab-private").delete)()
    await socket.send_to(text_data=json.dumps({"action": "retry", "turn": 1}))
    await frames_until_turn_end(socket)
    assert [c.key for c in script.choices] == [lab_models["private"], "env:scripted-default"]


async def test_without_a_model_the_chat_says_what_to_set_and_stores_nothing(owner, thread, settings, sockets, monkeypatch):
    settings.HAICO_MODEL = ""
    settings.HAICO_MODELS = []
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""

    class MustNotBuild:
        def warm(self, **kwargs):
            pass

        def graph(self, **kwargs):
            raise AssertionError("no agent may be built without a model")

    monkeypatch.setattr(registry, "agents", MustNotBuild())
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Draft my intro"))
    html = await socket.receive_from()
    assert "Draft my intro" in html
    assert "Set HAICO_MODEL" in html and "OPENAI_BASE_URL" in html
    assert "bubble-notice" in html
    assert 'id="chat-ack"' not in html  # the text stays in the composer
    assert await socket.receive_nothing(timeout=0.2)
    stored = await _db(thread)
    assert stored["turn_index"] == 0 and stored["snapshots"] == []


async def test_stop_keeps_the_partial_answer_and_the_next_turn_has_a_valid_history(owner, thread, script, sockets):
    model = script(
        Reply(tool_calls=[tool_call("add_todos", "Planning the draft.", steps=[{"text": "Write", "depth": 0}])]),
        Reply(text="alpha beta gamma delta epsilon zeta eta theta", token_delay=0.15),
        Reply(text="A fresh answer."),
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("write slowly"))
    await frame_containing(socket, "beta</div>")

    await socket.send_json_to({"action": "stop", "HEADERS": {}})
    frames = await frames_until_turn_end(socket)
    closing = frames[-1]
    assert 'id="turn-1-marker"' in closing and "Stopped" in closing
    assert "alpha beta" in closing and "theta" not in closing
    stored = await _db(thread)
    assert stored["running"] is None and stored["todos"] == ["Write"]

    await socket.send_to(text_data=_send("go on"))
    frames = await frames_until_turn_end(socket)
    assert "A fresh answer." in frames[-1]
    assert "Stopped" not in frames[-1]

    sent = model.requests[-1]
    kinds = [m.type for m in sent if m.type != "system"]
    assert kinds == ["human", "ai", "tool", "ai", "human"]
    assert sent[-2].content.startswith("alpha beta") and "theta" not in sent[-2].content
    _assert_valid_history(sent)


async def test_stop_with_no_running_turn_says_so(owner, thread, script, sockets):
    script(Reply(text="unused"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=json.dumps({"action": "stop"}))
    assert "No turn is running" in await socket.receive_from()


async def test_a_failed_turn_shows_a_safe_error_keeps_the_message_and_can_be_retried(owner, thread, script, sockets):
    def provider_down(messages):
        raise RuntimeError("secret upstream detail")

    script(provider_down, Reply(text="Back on track."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("try this"))
    frames = await frames_until_turn_end(socket)
    closing = frames[-1]
    assert 'role="alert"' in closing and "Something went wrong" in closing
    assert "secret upstream detail" not in "".join(frames)
    stored = await _db(thread)
    assert stored["snapshots"] == [(1, "try this")] and stored["running"] is None

    await socket.send_to(text_data=_send("try again"))
    frames = await frames_until_turn_end(socket)
    assert "Back on track." in frames[-1]


def _assert_valid_history(messages):
    """Every tool call is answered before the next non-tool message."""
    open_calls: set = set()
    for message in messages:
        if message.type == "tool":
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, f"unanswered tool calls {open_calls} before a {message.type} message"
        if message.type == "ai":
            open_calls = {call["id"] for call in message.tool_calls}
    assert not open_calls


# --- Retry, and a page that reconnects after its server died -----------------------------


async def test_retry_runs_a_failed_turns_message_again_as_the_next_turn(owner, thread, script, sockets):
    def unreachable(messages):
        raise ConnectionError("model server down")

    script(unreachable, Reply(text="Worked this time."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("Summarise the notes"))
    frames = await frames_until_turn_end(socket)
    assert 'aria-label="Retry turn 1"' in frames[-1] and "Something went wrong" in frames[-1]

    await socket.send_to(text_data=json.dumps({"action": "retry", "turn": "1", "HEADERS": {"HX-Request": "true"}}))
    frames = await frames_until_turn_end(socket)
    shell = frames[_index(frames, 'id="turn-2"')]
    assert "turn-1-retry" not in shell  # the old button hides itself once turn 2 follows (chat.css)
    assert "Summarise the notes" in shell  # the same message, not retyped
    assert "Worked this time." in frames[-1] and "Retry turn 2" not in frames[-1]

    from conversations.models import Turn

    rows = await database_sync_to_async(
        lambda: list(Turn.objects.filter(thread=thread).values_list("index", "user_message", "status", "retry_of"))
    )()
    assert rows == [(1, "Summarise the notes", "failed", None), (2, "Summarise the notes", "complete", 1)]
    snapshots = await database_sync_to_async(
        lambda: list(WorkspaceSnapshot.objects.filter(thread=thread).values_list("turn_index", "user_message"))
    )()
    assert snapshots == [(1, "Summarise the notes"), (2, "Summarise the notes")]


async def test_retry_of_a_turn_that_ended_normally_is_refused_with_a_notice(owner, thread, script, sockets):
    script(Reply(text="All good."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("hello"))
    await frames_until_turn_end(socket)
    await socket.send_to(text_data=json.dumps({"action": "retry", "turn": 1}))
    notice = await socket.receive_from(timeout=5)
    assert 'id="chat-notice"' in notice and "ended normally" in notice
    for bad in ("x", None, 99, [1]):
        await socket.send_to(text_data=json.dumps({"action": "retry", "turn": bad}))
        assert 'id="chat-notice"' in await socket.receive_from(timeout=5)
    assert (await _db(thread))["turn_index"] == 1


async def test_another_users_socket_cannot_retry_or_see_a_turn(owner, other_user, thread, script, sockets):
    from conversations.models import Turn
    from conversations.turns import slot

    script(Reply(text="never"))
    await database_sync_to_async(slot.turn_begin)(thread=thread, user_message="private")
    await database_sync_to_async(slot.turn_finish)(thread=thread, turn_index=1, status=Turn.Status.FAILED, notice="x")
    socket = await open_socket(thread.pk, other_user)
    assert "does not exist or is not yours" in await socket.receive_from(timeout=5)
    assert (await socket.receive_output(timeout=5))["type"] == "websocket.close"
    assert (await _db(thread))["turn_index"] == 1


async def test_a_page_reconnecting_after_its_server_died_learns_how_the_turn_ended(owner, thread, script, sockets):
    from conversations.models import Turn
    from conversations.turns import outcome, process, slot

    script(Reply(text="unused"))
    await database_sync_to_async(slot.turn_begin)(thread=thread, user_message="killed mid-answer")
    await database_sync_to_async(slot.turns_save_answers)(answers={(thread.pk, 1): "The first half"})
    await database_sync_to_async(Turn.objects.filter(thread=thread).update)(boot="earlier-boot")
    # The restarted server releases it at start-up (before the page reconnects).
    assert await database_sync_to_async(slot.turns_release_predecessor)() == 1
    assert process.instance()
    socket = await sockets(thread.pk, owner)
    html = await frame_containing(socket, outcome.INTERRUPTED_RESTART)
    assert "The first half" in html[-1] and 'aria-label="Retry turn 1"' in html[-1] and 'data-state="idle"' in html[-1]


async def test_a_failed_step_is_marked_in_the_live_trace(owner, thread, script, sockets):
    script(
        Reply(
            tool_calls=[tool_call("chart_generator", "Drawing a chart with no data.", chart_type="bar", title="Empty", data=[])]
        ),
        Reply(text="The chart needs data."),
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("chart it"))
    frames = await frames_until_turn_end(socket)
    marked = frames[_index(frames, 'class="reasoning-step is-failed"')]
    assert re.search(
        r'<li id="turn-1-step-1" class="reasoning-step is-failed" hx-swap-oob="true">Drawing a chart with no data. <span class="step-status">Failed</span></li>',
        marked,
    )
    # The closing fragment keeps the mark.
    assert "is-failed" in frames[-1]


# --- continuing from a turn of the trajectory map (docs/adr/0016) -----------------


def _continue(message, thread_id, turn):
    return json.dumps(
        {"message": message, "continue_thread": str(thread_id), "continue_turn": str(turn), "HEADERS": {"HX-Request": "true"}}
    )


async def test_a_message_sent_from_a_turns_preview_branches_there_and_runs_in_the_branch(owner, thread, script, sockets):
    from conversations.models import BranchLink

    script(Reply(text="First answer."), Reply(text="Second answer."), Reply(text="Branch answer."))
    socket = await sockets(thread.pk, owner)
    for message in ("first", "second"):
        await socket.send_to(text_data=_send(message))
        frames = await frames_until_turn_end(socket)
    # The turn's node rides the turn's end (the map itself came with the first turn's).
    assert 'data-live-patch="trajectory"' in frames[-1] and 'data-turn="2"' in frames[-1]
    before = await _db(thread)

    await socket.send_to(text_data=_continue("a new direction", thread.pk, 1))
    frames = await frame_containing(socket, 'data-live-patch="navigate"')
    url = re.search(r'data-url="/threads/([0-9a-f-]+)/workspace/"', frames[-1])
    assert url is not None and url.group(1) != str(thread.pk)
    branch = await database_sync_to_async(Thread.objects.get)(pk=url.group(1))
    await registry.wait_for_turn(branch.pk)

    link = await database_sync_to_async(
        lambda: BranchLink.objects.values_list("parent_id", "branch_point_turn", "status").get(thread=branch)
    )()
    assert link == (thread.pk, 1, BranchLink.Status.ACTIVE)
    after_branch = await _db(branch)
    assert after_branch["turn_index"] == 2 and after_branch["snapshots"] == [(2, "a new direction")]
    assert await _db(thread) == before  # the source is as it was


async def test_continuing_from_a_turn_that_is_not_yours_is_refused_and_nothing_is_made(
    owner, other_user, thread, script, sockets
):
    from conversations.turns import slot

    script(Reply(text="never"))
    await database_sync_to_async(slot.turn_begin)(thread=thread, user_message="private")
    await database_sync_to_async(slot.turn_finish)(thread=thread, turn_index=1)
    theirs = await database_sync_to_async(thread_create)(owner=other_user, title="Theirs")
    socket = await sockets(theirs.pk, other_user)
    count = await database_sync_to_async(Thread.objects.count)()
    for thread_id, turn in ((thread.pk, 1), (theirs.pk, 1), ("not-a-uuid", 1), (thread.pk, "x"), (theirs.pk, None)):
        await socket.send_to(text_data=_continue("take it", thread_id, turn))
        notice = await socket.receive_from(timeout=5)
        assert 'id="chat-notice"' in notice and "not on your trajectory map" in notice
    assert await database_sync_to_async(Thread.objects.count)() == count


async def test_a_page_that_joins_is_told_what_its_map_shows_whether_or_not_a_turn_runs(owner, thread, sockets):
    """A node pushed between the page's render and its socket's join went to
    the pages already joined: once joined, the page is told the map's lanes
    and nodes as they are now, to fetch its map if it differs
    (static/js/trajectory.js, docs/adr/0156); not the map itself, which a
    newer node's push could overtake."""
    from conversations.branching import fork_thread
    from conversations.trajectory.layout import layout_key
    from conversations.trajectory.reads import family_graph
    from conversations.turns import slot

    for n in (1, 2):
        await database_sync_to_async(slot.turn_begin)(thread=thread, user_message=f"message {n}")
        await database_sync_to_async(slot.turn_finish)(thread=thread, turn_index=n, answer="ok")
    branch = await database_sync_to_async(fork_thread)(source=thread, turn_index=1, user=owner)
    layout = layout_key(await database_sync_to_async(family_graph)(thread=branch))
    check = f'data-check data-layout="{layout}" data-nodes="complete:2"'

    frames = await frame_containing(await sockets(branch.pk, owner), "data-check")
    assert check in frames[-1] and 'id="trajectory-map"' not in "".join(frames)

    # A turn of the branch runs (in no process here): the page is told all the same.
    await database_sync_to_async(slot.turn_begin)(thread=branch, user_message="message 2, again")
    frames = await frame_containing(await sockets(branch.pk, owner), "data-check")
    assert check in frames[-1]


# --- the agent's mode (docs/adr/0018) -------------------------------------------------

PLAN_TOOLS = {
    "read_document",
    "set_objective",
    "add_todos",
    "toggle_todos",
    "update_todos",
    "remove_todos",
    "list_todos",
    "list_preferences",
    "list_artifacts",
    "get_artifact",
}


def _send_in_mode(message, mode):
    return json.dumps({"message": message, "mode": mode, "HEADERS": {"HX-Request": "true"}})


async def test_a_turn_runs_in_the_mode_sent_with_its_message_and_the_thread_remembers_it(owner, thread, script, sockets):
    model = script(Reply(text="Planned."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send_in_mode("plan it", "plan"))
    await frames_until_turn_end(socket)
    assert set(model.tool_lists[0]) == PLAN_TOOLS
    assert "# Mode: Plan" in model.requests[0][0].content
    assert (await database_sync_to_async(Thread.objects.get)(pk=thread.pk)).mode == "plan"


async def test_a_message_without_a_mode_runs_in_the_threads_mode(owner, thread, script, sockets):
    await database_sync_to_async(Thread.objects.filter(pk=thread.pk).update)(mode="explore")
    model = script(Reply(text="Read."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("what is there?"))
    await frames_until_turn_end(socket)
    assert set(model.tool_lists[0]) == {"read_document", "list_todos", "list_preferences", "list_artifacts", "get_artifact"}


@pytest.mark.parametrize("mode", ["destroy", "", 3, ["plan"], {"mode": "plan"}])
async def test_an_unknown_mode_is_refused_with_a_notice_and_nothing_is_stored(owner, thread, script, sockets, mode):
    script(Reply(text="must not run"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send_in_mode("hi", mode))
    html = await socket.receive_from()
    assert 'id="chat-notice"' in html and "Choose a mode: one of Explore, Plan, Execute." in html
    assert await socket.receive_nothing(timeout=0.2)
    stored = await _db(thread)
    assert stored["turn_index"] == 0 and stored["snapshots"] == []
    assert (await database_sync_to_async(Thread.objects.get)(pk=thread.pk)).mode == "execute"


async def test_a_change_of_mode_during_a_turn_is_for_the_next_turn(owner, thread, script, sockets):
    def change_mode_meanwhile(messages):
        # The person picks Explore in another tab while the model is thinking.
        as_another_request(lambda: thread_set_mode(thread=Thread.objects.get(pk=thread.pk), mode="explore"))
        return Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")])

    model = script(change_mode_meanwhile, Reply(text="Done."), Reply(text="Second."))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send("go"))
    await frames_until_turn_end(socket)
    assert len(model.tool_lists[1]) == len(model.tool_lists[0]) == 19  # the whole turn in Execute
    await socket.send_to(text_data=_send("again"))
    await frames_until_turn_end(socket)
    assert len(model.tool_lists[2]) == 5
    assert "# Mode: Explore" in model.requests[2][0].content


async def test_reaching_the_modes_call_cap_is_said_in_the_chat_and_logged(owner, thread, script, sockets, settings):
    settings.HAICO_EXPLORE_CALL_LIMIT = 2
    script(default=Reply(tool_calls=[tool_call("list_todos", "Reading the plan.")]))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send_in_mode("loop", "explore"))
    frames = await frames_until_turn_end(socket)
    assert "reached the Explore mode's limit of 2 model calls (HAICO_EXPLORE_CALL_LIMIT)" in frames[-1]
    [entry] = await database_sync_to_async(list)(ActivityLogEntry.objects.filter(thread=thread))
    assert entry.level == "warning" and entry.turn_index == 1
    assert entry.message.startswith("The turn stopped at the Explore mode's limit of 2 model calls")
    assert entry.kind == "cap_reached" and "HAICO_EXPLORE_CALL_LIMIT" in entry.detail


# --- "Ask about selection": the passage a message is about --------------------------------

SELECTED_DOCUMENT = "# Essay\n\nThe first paragraph stays.\n\nThe second paragraph is the one to tighten.\n"


@database_sync_to_async
def _write_document(thread, content):
    from workspace.services import document as document_services

    document_services.document_save(thread=thread, content=content)


def _send_selection(message, selection):
    return json.dumps({"message": message, "selection": selection, "HEADERS": {"HX-Request": "true"}})


def _system_prompts(model):
    return [m.content for request in model.requests for m in request if m.type == "system"]


async def test_a_selection_sent_with_the_message_is_shown_to_every_model_call_of_the_turn(owner, thread, script, sockets):
    await _write_document(thread, SELECTED_DOCUMENT)
    start = SELECTED_DOCUMENT.index("The second")
    text = "The second paragraph is the one to tighten."
    model = script(
        Reply(tool_calls=[tool_call("add_todos", "Planning the edit.", steps=[{"text": "Tighten", "depth": 0}])]),
        Reply(text="Tightened."),
    )
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send_selection("Make this shorter", {"start": start, "end": start + len(text), "text": text}))
    frames = await frames_until_turn_end(socket)

    prompts = _system_prompts(model)
    assert len(prompts) == 2
    element = f'<selection start="{start}" end="{start + len(text)}">{text}</selection>'
    assert all(element in prompt for prompt in prompts)
    # Inside the workspace block, after the document; and the rule that edits stay within it.
    assert prompts[0].index("</document>") < prompts[0].index(element) < prompts[0].index("</workspace>")
    assert "keep any edit within it" in prompts[0]
    assert "no longer in the document" not in "".join(frames)


@pytest.mark.parametrize(
    "selection, note",
    [
        # The text at those offsets is not what was sent (the document changed since).
        ({"start": 10, "end": 20, "text": "not there"}, "no longer in the document as it was selected"),
        ({"start": 0, "end": 10_000, "text": "# Essay"}, "no longer in the document as it was selected"),
        ({"start": 5, "end": 3, "text": "# E"}, "no longer in the document as it was selected"),
        ({"start": 5, "end": 5, "text": ""}, "could not be read"),
        ({"start": -1, "end": 3, "text": "# E"}, "could not be read"),
        ({"start": "x", "end": 3, "text": "# E"}, "could not be read"),
        ({"start": 0, "end": 3, "text": ["# E"]}, "could not be read"),
        ({"start": True, "end": 3, "text": "# E"}, "could not be read"),
        ("0-3", "could not be read"),
        ([0, 3], "could not be read"),
    ],
)
async def test_a_selection_that_does_not_match_the_document_is_dropped_with_a_note(
    owner, thread, script, sockets, selection, note
):
    await _write_document(thread, SELECTED_DOCUMENT)
    model = script(Reply(text="ok"))
    socket = await sockets(thread.pk, owner)
    await socket.send_to(text_data=_send_selection("About this", selection))
    frames = await frames_until_turn_end(socket)

    assert note in "".join(frames)
    # The message still went, without a selection.
    assert len(model.requests) == 1
    assert "</selection>" not in _system_prompts(model)[0]


async def test_a_selection_moved_by_an_edit_before_it_is_found_again_and_a_rewritten_one_is_dropped(
    owner, thread, script, sockets
):
    from agent.context import Selection
    from agent.prompt import selection_in
    from workspace import selectors

    await _write_document(thread, SELECTED_DOCUMENT)
    text = "The first paragraph stays."
    start = SELECTED_DOCUMENT.index(text)
    selection = Selection(start=start, end=start + len(text), text=text)
    await _write_document(thread, "Intro.\n\n" + SELECTED_DOCUMENT)
    reading = await database_sync_to_async(selectors.workspace_reading_for)(thread=thread)
    assert selection_in(reading, selection) == Selection(start=start + 8, end=start + 8 + len(text), text=text)
    await _write_document(thread, "Rewritten entirely.")
    reading = await database_sync_to_async(selectors.workspace_reading_for)(thread=thread)
    assert selection_in(reading, selection) is None


# --- per person: open pages and running turns (docs/adr/0051) -------------------


async def test_one_person_opens_at_most_the_limit_of_pages_and_a_closed_one_frees_its_place(
    owner,
    other_user,
    thread,
    script,
    sockets,
    settings,
):
    settings.HAICO_MAX_OPEN_PAGES = 3
    opened = [await sockets(thread.pk, owner) for _ in range(3)]
    refused = await open_socket(thread.pk, owner)
    try:
        notice = await refused.receive_from()
        assert "You have 3 HAICO pages open, the most at once" in notice and "close one" in notice
        assert (await refused.receive_output())["code"] == 4429
    finally:
        await refused.disconnect()
    # Someone else is not counted with them.
    mine = await database_sync_to_async(thread_create)(owner=other_user)
    await sockets(mine.pk, other_user)
    # Closing a page frees its place at once.
    await opened[0].disconnect()
    again = await sockets(thread.pk, owner)
    await again.send_to(text_data=json.dumps({"action": "stop"}))
    assert "No turn is running" in await again.receive_from()


async def test_one_person_runs_at_most_the_limit_of_turns_at_once_across_threads(owner, thread, script, sockets, settings):
    settings.HAICO_MAX_RUNNING_TURNS = 2
    slow = Reply(text="a slow answer that takes a good while to stream", token_delay=0.2)
    script(slow, slow, default=Reply(text="quick"))
    threads = [thread, *[await database_sync_to_async(thread_create)(owner=owner) for _ in range(2)]]
    busy = []
    for running in threads[:2]:
        socket = await sockets(running.pk, owner)
        await socket.send_to(text_data=_send("work on this"))
        busy.append(socket)
    third = await sockets(threads[2].pk, owner)
    await third.send_to(text_data=_send("and this"))
    frames = await frame_containing(third, 'id="chat-notice"')
    assert any("You have 2 turns running in other threads, the most at once" in f for f in frames)
    assert (await _db(threads[2]))["turn_index"] == 0  # nothing stored
    for socket in busy:
        await frames_until_turn_end(socket)
    await third.send_to(text_data=_send("and this"))
    await frames_until_turn_end(third)
    assert (await _db(threads[2]))["turn_index"] == 1
