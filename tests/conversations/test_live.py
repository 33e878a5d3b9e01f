"""The live layer: every committed change reaches the open tabs of its
thread (and only those), whoever made it; fragments keep their order and are
batched into few messages."""

import asyncio
import re

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.http import HttpRequest
from django.test import Client

from conversations.live import FRAGMENT_EVENT, Publisher, group_name
from conversations.services import activity_log, thread_create
from tests.conftest import PASSWORD
from tests.support.patches import only_patch
from tests.support.sockets import frames_within
from workspace.models import PlanChange, Preference
from workspace.services import preferences as preference_services

from .helpers import frame_containing

pytestmark = pytest.mark.django_db(transaction=True)


def _post(user, path, data):
    client = Client()
    client.force_login(user)
    return client.post(path, data, HTTP_HX_REQUEST="true")


async def test_the_owners_edit_in_one_tab_reaches_another_open_tab(owner, thread, sockets):
    second_tab = await sockets(thread.pk, owner)
    response = await sync_to_async(_post)(owner, f"/threads/{thread.pk}/workspace/plan/add/", {"text": "Find sources"})
    assert response.status_code == 200
    html = await second_tab.receive_from(timeout=3)
    [row] = only_patch(html, "plan").rows
    assert row.text == "Find sources" and row.number == "1"
    # The same fragment the person's own tab got as its HTMX answer.
    assert html == response.content.decode()


async def test_a_write_to_a_thread_no_page_shows_renders_no_patch_and_one_opened_after_shows_it(
    owner, thread, sockets, monkeypatch
):
    """Nothing would receive the patches: they are not rendered. A tab the
    owner opens afterwards is drawn from the database, the write in it."""
    from conversations import live

    rendered = []
    real_render = live.render_changes

    def counted_render(thread, changes):
        rendered.append(sorted(change.surface for change in changes))
        return real_render(thread, changes)

    monkeypatch.setattr(live, "render_changes", counted_render)
    response = await sync_to_async(_post)(owner, f"/threads/{thread.pk}/workspace/plan/add/", {"text": "Find sources"})
    assert response.status_code == 200
    assert rendered == []

    client = Client()
    await sync_to_async(client.force_login)(owner)
    page = await sync_to_async(client.get)(f"/threads/{thread.pk}/workspace/")
    assert page.status_code == 200 and "Find sources" in page.content.decode()

    tab = await sockets(thread.pk, owner)
    await sync_to_async(_post)(owner, f"/threads/{thread.pk}/workspace/plan/add/", {"text": "Read them"})
    html = await tab.receive_from(timeout=3)
    assert [row.text for row in only_patch(html, "plan").rows] == ["Read them"]
    assert rendered == [["plan", "plan_history"]]


async def test_an_editors_plan_edit_reaches_the_owners_tab_with_a_marker_of_the_history_entry(owner, other_user, thread, sockets):
    from workspace.models import ThreadMember

    await sync_to_async(ThreadMember.objects.create)(thread=thread, user=other_user, role=ThreadMember.Role.EDITOR)
    owners_tab = await sockets(thread.pk, owner)

    response = await sync_to_async(_post)(other_user, f"/threads/{thread.pk}/workspace/plan/add/", {"text": "Their step"})

    assert response.status_code == 200
    html = await owners_tab.receive_from(timeout=3)
    [row] = only_patch(html, "plan").rows
    marker = only_patch(html, "plan-history")
    assert row.text == "Their step"
    # The entry's id, not the entry: a tab with the history open asks for it (docs/adr/0092).
    entry = await sync_to_async(PlanChange.objects.get)(thread=thread)
    assert marker.rows == [] and marker.attrs["data-oldest"] == marker.attrs["data-newest"] == str(entry.pk)
    assert entry.person_username == other_user.username
    assert len(html.encode()) <= 2048, len(html.encode())


async def test_a_staff_lock_in_the_admin_reaches_the_owners_tab(owner, staff, thread, sockets):
    preference = await sync_to_async(preference_services.preference_add)(thread=thread, title="Cite sources", respect_lock=False)
    tab = await sockets(thread.pk, owner)
    client = Client()
    # django-axes checks every authentication against the request it came with.
    await sync_to_async(client.login)(request=HttpRequest(), username="staff", password=PASSWORD)
    response = await sync_to_async(client.post)(
        "/admin/workspace/preference/",
        {"action": "lock_selected", "_selected_action": [preference.pk], "index": "0"},
    )
    assert response.status_code == 302
    html = await tab.receive_from(timeout=3)
    [row] = only_patch(html, "preferences").rows
    assert row.text == "Cite sources" and "Locked</span>" in html
    assert await sync_to_async(Preference.objects.filter(pk=preference.pk, locked=True).exists)()


async def test_changes_reach_only_the_tabs_of_their_own_thread(owner, other_user, thread, sockets):
    theirs = await sync_to_async(thread_create)(owner=other_user, title="Theirs")
    their_tab = await sockets(theirs.pk, other_user)
    my_tab = await sockets(thread.pk, owner)
    await sync_to_async(preference_services.preference_add)(thread=thread, title="Mine only", respect_lock=False)
    assert "Mine only" in await my_tab.receive_from(timeout=3)
    assert await their_tab.receive_nothing(timeout=0.3)


async def test_fragments_queued_together_go_out_as_one_message_in_order(thread):
    layer = get_channel_layer()
    listener = await layer.new_channel()
    await layer.group_add(group_name(thread.pk), listener)
    publisher = Publisher()
    publisher.attach()
    for n in range(5):
        publisher.publish(thread.pk, f"<i>{n}</i>")
    first = await asyncio.wait_for(layer.receive(listener), 2)
    rest = []
    while True:
        try:
            rest.append(await asyncio.wait_for(layer.receive(listener), 0.2))
        except TimeoutError:
            break
    messages = [first, *rest]
    assert "".join(m["html"] for m in messages) == "".join(f"<i>{n}</i>" for n in range(5))
    assert len(messages) <= 2  # the first goes at once, the rest together
    assert all(m["type"] == FRAGMENT_EVENT and m["origin"] == publisher.origin for m in messages)
    assert [m["seq"] for m in messages] == list(range(1, len(messages) + 1))


async def test_a_publish_from_a_worker_thread_arrives_through_the_servers_loop(thread):
    layer = get_channel_layer()
    listener = await layer.new_channel()
    await layer.group_add(group_name(thread.pk), listener)
    publisher = Publisher()
    publisher.attach()
    await sync_to_async(publisher.publish, thread_sensitive=False)(thread.pk, "<b>from a thread</b>")
    message = await asyncio.wait_for(layer.receive(listener), 2)
    assert message["html"] == "<b>from a thread</b>"


async def test_ticking_one_step_of_a_300_step_plan_pushes_under_2_kb(owner, thread, sockets):
    from workspace.services import plan as plan_services

    steps = [{"text": f"Step number {i} of the long plan", "depth": 0 if i % 4 == 0 else 1} for i in range(300)]
    await sync_to_async(plan_services.todos_add_outline)(thread=thread, steps=steps)
    tab = await sockets(thread.pk, owner)
    await sync_to_async(plan_services.todos_toggle_by_index)(thread=thread, indices=[151])
    html = await tab.receive_from(timeout=3)
    assert len(html.encode()) <= 2048, len(html.encode())
    [row] = only_patch(html, "plan").rows
    assert row.checked and row.number.count(".") == 1


async def test_adding_a_preference_pushes_that_row_not_the_panel(owner, thread, sockets):
    for i in range(50):
        await sync_to_async(preference_services.preference_add)(thread=thread, title=f"Existing {i}", respect_lock=False)
    tab = await sockets(thread.pk, owner)
    await sync_to_async(preference_services.preference_add)(thread=thread, title="Brand new", kind="hard", respect_lock=False)
    html = await tab.receive_from(timeout=3)
    [row] = only_patch(html, "preferences").rows
    assert row.text == "Brand new" and "Existing" not in html and len(html.encode()) <= 2048


async def test_a_fragment_no_socket_could_encode_reaches_every_tab_readable(owner, thread, sockets):
    from conversations.live import publisher

    tabs = [await sockets(thread.pk, owner), await sockets(thread.pk, owner)]
    layer = get_channel_layer()
    other_process = await layer.new_channel()
    await layer.group_add(group_name(thread.pk), other_process)

    publisher.publish(thread.pk, "<p>lone \ud800 surrogate</p>")
    publisher.publish(thread.pk, "<p>and the next one</p>")

    for tab in tabs:
        html = await tab.receive_from(timeout=3)
        if "next one" not in html:
            html += await tab.receive_from(timeout=3)
        assert html == "<p>lone \ufffd surrogate</p><p>and the next one</p>"
    # What goes to other processes can be encoded too (channels-redis packs UTF-8).
    message = await asyncio.wait_for(layer.receive(other_process), 2)
    assert "\ufffd" in message["html"]
    message["html"].encode("utf-8")


async def test_a_new_activity_entry_reaches_every_open_tab_of_its_thread_only(owner, other_user, thread, sockets):
    first_tab, second_tab = await sockets(thread.pk, owner), await sockets(thread.pk, owner)
    elsewhere = await sync_to_async(thread_create)(owner=other_user, title="Theirs")
    their_tab = await sockets(elsewhere.pk, other_user)
    await sync_to_async(activity_log)(
        thread=thread, message="The model was busy; retried twice.", kind="retry", detail="HTTP 429: <slow down>", turn_index=1
    )
    for tab in (first_tab, second_tab):
        html = await tab.receive_from(timeout=3)
        # At the top of an open log; a closed one counts it (static/js/activity.js).
        assert html.startswith('<ol id="activity-entries" hx-swap-oob="afterbegin">')
        assert "The model was busy; retried twice." in html and 'class="activity-entry level-info kind-retry is-new"' in html
        assert "<summary>Details</summary>" in html and "HTTP 429: &lt;slow down&gt;" in html
    assert await their_tab.receive_nothing(timeout=0.3)


async def test_a_mode_chosen_in_one_tab_updates_the_selector_in_another(owner, thread, sockets):
    second_tab = await sockets(thread.pk, owner)
    response = await sync_to_async(_post)(owner, f"/threads/{thread.pk}/mode/", {"mode": "plan"})
    assert response.status_code == 200
    html = await second_tab.receive_from(timeout=3)
    # Its value, set in place: the selector itself is not replaced (a keyboard user on it keeps focus).
    assert html == (
        '<div hx-swap-oob="beforeend:#live-inbox"><template data-live-patch="value" data-target="chat-mode" '
        'data-value="plan"></template></div>'
    )
    # Choosing the mode it already has announces nothing.
    await sync_to_async(_post)(owner, f"/threads/{thread.pk}/mode/", {"mode": "plan"})
    assert await second_tab.receive_nothing(timeout=0.3)


async def test_a_model_chosen_in_one_tab_is_set_in_the_others_selector(owner, thread, sockets, model_settings):
    second_tab = await sockets(thread.pk, owner)
    response = await sync_to_async(_post)(owner, f"/threads/{thread.pk}/model/", {"model": "env:scripted-other"})
    assert response.status_code == 200
    html = await second_tab.receive_from(timeout=3)
    assert html == (
        '<div hx-swap-oob="beforeend:#live-inbox"><template data-live-patch="value" data-target="chat-model" '
        'data-value="env:scripted-other"></template></div>'
    )
    await sync_to_async(_post)(owner, f"/threads/{thread.pk}/model/", {"model": "env:scripted-other"})
    assert await second_tab.receive_nothing(timeout=0.3)


async def _until_present(thread, pages: int):
    """The pages' presence is recorded just after their sockets open (conversations.presence)."""
    from conversations.models import OpenPage

    for _ in range(100):
        if await OpenPage.objects.filter(thread=thread).acount() == pages:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the {pages} pages were not recorded as open")


async def test_the_owners_model_choice_reaches_each_page_as_its_person_is_offered_it(
    owner, other_user, thread, sockets, model_settings
):
    """One person's models are not another's (docs/adr/0084): the editor's
    selector is never sent a model only the owner is offered; it shows the
    editor's default, as their page does once reloaded."""
    from agent.models import CatalogueModel, Provider
    from conversations import sharing

    def owners_own_model():
        provider = Provider.objects.create(name="Lab", base_url="http://127.0.0.1:9/v1", api_key="sk-lab-000000001")
        model = CatalogueModel.objects.create(provider=provider, name="private", label="Lab private", everyone=False)
        model.people.add(owner)
        return f"catalogue:{model.pk}"

    key = await sync_to_async(owners_own_model)()
    await sync_to_async(sharing.thread_member_add)(thread=thread, who=other_user.username, role="editor", by=owner)
    owners_other_tab = await sockets(thread.pk, owner)
    editors_tab = await sockets(thread.pk, other_user)
    await _until_present(thread, 2)

    response = await sync_to_async(_post)(owner, f"/threads/{thread.pk}/model/", {"model": key})
    assert response.status_code == 200

    assert f'data-target="chat-model" data-value="{key}"' in await owners_other_tab.receive_from(timeout=3)
    editors = await editors_tab.receive_from(timeout=3)
    assert 'data-target="chat-model" data-value="env:scripted-default"' in editors and key not in editors


def _ended_turn(thread):
    from conversations.turns import slot

    turn, _ = slot.turn_begin(thread=thread, user_message="hello")
    slot.turn_finish(thread=thread, turn_index=turn, answer="Hi.")
    return turn


async def test_feedback_left_or_removed_in_one_tab_updates_the_count_in_the_others(owner, other_user, thread, sockets):
    from conversations.models import Feedback

    turn = await sync_to_async(_ended_turn)(thread)
    second_tab = await sockets(thread.pk, owner)
    assert 'id="turn-1-marker"' in await second_tab.receive_from(timeout=3)  # how the latest turn ended, on connect
    elsewhere = await sync_to_async(thread_create)(owner=other_user, title="Theirs")
    their_tab = await sockets(elsewhere.pk, other_user)
    for rating, aspect in ((4, "helpfulness"), (2, "tone")):
        response = await sync_to_async(_post)(
            owner, f"/threads/{thread.pk}/turns/{turn}/feedback/", {"scope": "turn", "aspect": aspect, "rating": rating}
        )
        assert response.status_code == 200
    counts = []
    while len(counts) < 2:
        # Two pushes queued within one send window go out in one message.
        html = await second_tab.receive_from(timeout=3)
        for patch in html.split('<div hx-swap-oob="beforeend:#live-inbox">')[1:]:
            # The closed control, put in place only where the region is closed (an open one keeps its form).
            assert patch.startswith('<template data-live-patch="swap" data-unless=".is-open">')
            assert f'<div id="turn-{turn}-feedback" class="turn-feedback">' in patch
            counts.append(patch.split("</span>", 1)[1].split("</button>", 1)[0].strip())
    assert counts == ["(1 left)", "(2 left)"]

    entry = await Feedback.objects.filter(thread=thread).afirst()
    await sync_to_async(_post)(owner, f"/threads/{thread.pk}/feedback/{entry.pk}/delete/", {})
    html = await second_tab.receive_from(timeout=3)
    assert "(1 left)" in html
    # Changing an entry leaves the count as it is: nothing to push.
    other = await Feedback.objects.filter(thread=thread).afirst()
    await sync_to_async(_post)(
        owner, f"/threads/{thread.pk}/feedback/{other.pk}/", {"scope": "turn", "aspect": other.aspect, "rating": 5}
    )
    assert await second_tab.receive_nothing(timeout=0.3)
    assert await their_tab.receive_nothing(timeout=0.1)


async def _frames(socket, seconds=1.5) -> list[str]:
    """What the page is sent within `seconds`."""
    frames, _closed = await frames_within(socket, seconds)
    return frames


def _feedback_counts(frames, turn) -> list[str]:
    """The "(N left)" of `turn`'s Feedback control in what a page was pushed ("" for none)."""
    found = []
    for frame in frames:
        for part in frame.split(f'<div id="turn-{turn}-feedback" class="turn-feedback">')[1:]:
            button = part.split("</button>", 1)[0]
            found.append(m.group(0) if (m := re.search(r"\(\d+ left\)", button)) else "")
    return found


async def test_an_editors_feedback_count_reaches_their_own_pages_only(owner, other_user, django_user_model, thread, sockets):
    """Feedback is personal (docs/adr/0084): the owner's and a viewer's
    Feedback control never says "(2 left)" for feedback they did not leave."""
    from conversations import sharing

    turn = await sync_to_async(_ended_turn)(thread)
    await sync_to_async(django_user_model.objects.create_user)(username="vi", password=PASSWORD)
    await sync_to_async(sharing.thread_member_add)(thread=thread, who=other_user.username, role="editor", by=owner)
    await sync_to_async(sharing.thread_member_add)(thread=thread, who="vi", role="viewer", by=owner)
    viewer = await sync_to_async(django_user_model.objects.get)(username="vi")
    pages = {
        "owner": await sockets(thread.pk, owner),
        "viewer": await sockets(thread.pk, viewer),
        "editor": await sockets(thread.pk, other_user),
    }
    await _until_present(thread, 3)
    for page in pages.values():
        await _frames(page, 0.5)  # how the latest turn ended, on connect

    for aspect in ("helpfulness", "tone"):
        response = await sync_to_async(_post)(
            other_user,
            f"/threads/{thread.pk}/turns/{turn}/feedback/",
            {"scope": "turn", "aspect": aspect, "rating": 1, "comment": "the owner's framing is wrong"},
        )
        assert response.status_code == 200 and "your feedback is saved" in response.content.decode()

    seen = {who: _feedback_counts(await _frames(page, 1.0), turn) for who, page in pages.items()}
    assert seen["owner"] == [] and seen["viewer"] == []
    assert seen["editor"][-1] == "(2 left)"


# --- no message larger than a page or the layer takes (docs/adr/0043) ---------


async def _messages_of(layer, listener, quiet: float = 0.3) -> list[dict]:
    messages = []
    while True:
        try:
            messages.append(await asyncio.wait_for(layer.receive(listener), quiet))
        except TimeoutError:
            return messages


async def _listening(thread):
    layer = get_channel_layer()
    listener = await layer.new_channel()
    await layer.group_add(group_name(thread.pk), listener)
    return layer, listener


async def test_fragments_queued_past_the_message_limit_go_out_in_several_messages_in_order(thread):
    from conversations.live import MESSAGE_MAX_BYTES, message_size

    layer, listener = await _listening(thread)
    publisher = Publisher()
    publisher.attach()
    pieces = [f"<p>{n:03d}{'é' * 9_000}</p>" for n in range(60)]  # 60 x 18 KB: over a megabyte
    for piece in pieces:
        publisher.publish(thread.pk, piece)
    messages = await _messages_of(layer, listener)
    assert "".join(m["html"] for m in messages) == "".join(pieces)
    assert len(messages) >= 5
    assert all(message_size(m["html"]) <= MESSAGE_MAX_BYTES for m in messages)


async def test_appends_to_one_element_that_go_out_together_are_one_fragment_in_order(thread):
    """A streaming answer's tokens: a page swaps one fragment per element
    and message, however fast the model writes (docs/adr/0104)."""
    layer, listener = await _listening(thread)
    publisher = Publisher()
    publisher.attach()
    publisher.publish(thread.pk, "<i>before</i>")
    for n in range(200):
        publisher.publish_append(thread.pk, "turn-3-answer-content", f" w{n}")
    publisher.publish(thread.pk, "<i>between</i>")
    publisher.publish_append(thread.pk, "turn-3-answer-content", " after")
    publisher.publish_append(thread.pk, "turn-3-steps", "<li>a step</li>")
    messages = await _messages_of(layer, listener)
    stream = "".join(m["html"] for m in messages)
    words = "".join(f" w{n}" for n in range(200))
    assert stream == (
        "<i>before</i>"
        f'<div id="turn-3-answer-content" hx-swap-oob="beforeend">{words}</div>'
        "<i>between</i>"
        '<div id="turn-3-answer-content" hx-swap-oob="beforeend"> after</div>'
        '<div id="turn-3-steps" hx-swap-oob="beforeend"><li>a step</li></div>'
    )


def test_joined_appends_stop_at_their_size_limit_and_at_another_recipient():
    from conversations.live import APPEND_JOIN_MAX_CHARS, RESYNC, Append, joined_appends

    page = object()
    piece = "x" * (APPEND_JOIN_MAX_CHARS // 2)
    items = [(None, Append("a", piece), RESYNC)] * 3 + [(page, Append("a", "y"), RESYNC), (None, Append("a", "z"), RESYNC)]
    joined = joined_appends(items)
    inner = [(to, html.removeprefix('<div id="a" hx-swap-oob="beforeend">').removesuffix("</div>")) for to, html, _ in joined]
    assert inner == [(None, piece + piece), (None, piece), (page, "y"), (None, "z")]


async def test_a_fragment_too_big_for_one_message_is_replaced_by_its_stand_in_for_every_tab(owner, thread, sockets):
    from conversations.live import MESSAGE_MAX_BYTES, RESYNC, publisher

    tab = await sockets(thread.pk, owner, presence=True)
    await frame_containing(tab, 'id="presence"')  # its own opening's push, before another process listens
    layer, listener = await _listening(thread)  # as another process's page would
    huge = "<div>" + "x" * (MESSAGE_MAX_BYTES + 1) + "</div>"
    publisher.publish(thread.pk, huge, too_big="<i>fetch it</i>")
    publisher.publish(thread.pk, huge)  # no stand-in named: the page reloads what it shows
    publisher.publish(thread.pk, "<b>small, after it</b>")
    received = []
    while "small, after it" not in "".join(received):
        received.append(await tab.receive_from(timeout=3))
    assert "".join(received) == "<i>fetch it</i>" + RESYNC + "<b>small, after it</b>"
    other = await _messages_of(layer, listener)
    assert "".join(m["html"] for m in other) == "<i>fetch it</i>" + RESYNC + "<b>small, after it</b>"


async def test_a_layer_send_that_fails_is_followed_by_a_resync_for_the_other_processes(thread, monkeypatch, caplog):
    from channels.layers import InMemoryChannelLayer

    from conversations import live

    class FailingOnce(InMemoryChannelLayer):
        failed = False

        async def group_send(self, group, message):
            if "lost" in message["html"] and not self.failed:
                self.failed = True
                raise ConnectionError("the layer is down for a moment")
            await super().group_send(group, message)

    layer = FailingOnce()
    monkeypatch.setattr(live, "get_channel_layer", lambda: layer)
    listener = await layer.new_channel()
    await layer.group_add(group_name(thread.pk), listener)
    publisher = Publisher()
    publisher.attach()
    publisher.publish(thread.pk, "<p>lost on the way</p>")
    messages = await _messages_of(layer, listener)
    assert [m["html"] for m in messages] == [live.RESYNC]
    assert "could not send" in caplog.text


async def test_a_page_this_process_could_not_send_to_is_told_to_resync(thread):
    from conversations.live import RESYNC

    class Page:
        channel_name = "page-1"

        def __init__(self):
            self.got = []
            self.refused = False

        async def deliver(self, html):
            if not self.refused:
                self.refused = True
                raise ConnectionError("the socket hiccuped")
            self.got.append(html)

    page = Page()
    publisher = Publisher()
    publisher.attach()
    await publisher.join(thread.pk, page)
    publisher.publish(thread.pk, "<p>missed</p>")
    await asyncio.sleep(0.3)
    assert page.got == [RESYNC]


async def test_a_frame_too_big_for_the_socket_is_never_sent_the_page_resyncs_instead(owner, thread, sockets):
    from conversations.live import MESSAGE_MAX_BYTES, RESYNC, publisher

    tab = await sockets(thread.pk, owner)
    [consumer] = list(publisher._members[group_name(thread.pk)])
    await consumer.send(text_data="x" * (MESSAGE_MAX_BYTES + 1))
    assert await tab.receive_from(timeout=3) == RESYNC
