"""The chat's per-message Regenerate and Edit (conversations.views,
conversations.branching.rerun_in_branch): turn N runs again in a new branch
at N-1, the page moves there, and the original thread is unchanged."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from agent.history import read_messages
from conversations.chat import chat_turns
from conversations.models import BranchLink, Turn
from conversations.selectors import turn_versions_for
from conversations.turns import registry
from workspace.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)


class _Client(AsyncClient):
    """Every request as htmx sends it (or, htmx=False, a plain form post)."""

    def __init__(self, *, htmx: bool, **kwargs):
        super().__init__(**kwargs)
        self.htmx = htmx

    def generic(self, *args, headers=None, **kwargs):
        headers = {**(headers or {}), **({"HX-Request": "true"} if self.htmx else {})}
        return super().generic(*args, headers=headers, **kwargs)


async def _client(user, *, htmx=True):
    client = _Client(htmx=htmx)
    await client.aforce_login(user)
    return client


def _url(thread, turn, action):
    return f"/threads/{thread.pk}/turns/{turn}/{action}/"


def _shown(thread):
    thread = Thread.objects.get(pk=thread.pk)
    return [(t["turn_index"], t["user_message"], t["answer_html"].strip()) for t in chat_turns(thread=thread)]


async def _the_branch(source):
    link = await database_sync_to_async(BranchLink.objects.select_related("thread").get)(parent=source)
    await registry.wait_for_turn(link.thread_id)
    return link


async def test_edit_runs_the_changed_message_as_turn_n_of_a_new_branch(owner, two_answered_turns):
    thread = two_answered_turns
    client = await _client(owner)
    response = await client.post(_url(thread, 2, "edit"), {"message": "second message, edited"})
    link = await _the_branch(thread)
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/threads/{link.thread_id}/workspace/#turn-2"
    assert (link.branch_point_turn, link.status) == (1, BranchLink.Status.ACTIVE)
    assert await database_sync_to_async(_shown)(link.thread) == [
        (1, "first message", "<p>Answer one.</p>"),
        (2, "second message, edited", "<p>Another answer.</p>"),
    ]
    assert await database_sync_to_async(_shown)(thread) == [
        (1, "first message", "<p>Answer one.</p>"),
        (2, "second message", "<p>Answer two.</p>"),
    ]


async def test_regenerate_runs_the_same_message_again_in_a_new_branch(owner, two_answered_turns, script):
    thread = two_answered_turns
    client = await _client(owner)
    response = await client.post(_url(thread, 2, "regenerate"))
    link = await _the_branch(thread)
    assert response["HX-Redirect"] == f"/threads/{link.thread_id}/workspace/#turn-2"
    assert await database_sync_to_async(_shown)(link.thread) == [
        (1, "first message", "<p>Answer one.</p>"),
        (2, "second message", "<p>Another answer.</p>"),
    ]
    humans = [m.content for m in script.model.requests[-1] if m.type == "human"]
    assert humans == ["first message", "second message"]
    row = await database_sync_to_async(Turn.objects.get)(thread=link.thread, index=2)
    assert row.status == Turn.Status.COMPLETE
    # The original keeps its own history.
    assert [m.content for m in await database_sync_to_async(read_messages)(thread.pk) if m.type == "human"] == [
        "first message",
        "second message",
    ]


async def test_regenerating_a_turn_twice_makes_two_branches_the_thread_list_tells_apart(owner, two_answered_turns):
    client = await _client(owner)
    titles = []
    for _ in range(2):
        await client.post(_url(two_answered_turns, 2, "regenerate"))
        link = await database_sync_to_async(BranchLink.objects.select_related("thread").latest)("created_at")
        await registry.wait_for_turn(link.thread_id)
        titles.append(link.thread.title)
    assert titles == ["Lit review (turn 2 regenerated)", "Lit review (turn 2 regenerated, take 2)"]


async def test_editing_the_first_message_branches_before_any_turn(owner, two_answered_turns):
    client = await _client(owner, htmx=False)
    response = await client.post(_url(two_answered_turns, 1, "edit"), {"message": "a new start"})
    link = await _the_branch(two_answered_turns)
    assert response.status_code == 302 and response["Location"] == f"/threads/{link.thread_id}/workspace/#turn-1"
    assert link.branch_point_turn == 0
    assert await database_sync_to_async(_shown)(link.thread) == [(1, "a new start", "<p>Another answer.</p>")]


async def test_the_versions_of_a_turn_link_the_sibling_branches(owner, two_answered_turns):
    thread = two_answered_turns
    client = await _client(owner)
    await client.post(_url(thread, 2, "edit"), {"message": "edited once"})
    first = await _the_branch(thread)
    await client.post(_url(first.thread, 2, "regenerate"))
    second = await database_sync_to_async(BranchLink.objects.select_related("thread").get)(parent_id=first.thread_id)
    await registry.wait_for_turn(second.thread_id)

    original = await database_sync_to_async(turn_versions_for)(thread=thread)
    assert list(original) == [2]
    assert (original[2].position, original[2].count, original[2].previous_id, original[2].next_id) == (
        1,
        3,
        None,
        first.thread_id,
    )
    middle = await database_sync_to_async(turn_versions_for)(thread=first.thread)
    assert (middle[2].position, middle[2].previous_id, middle[2].next_id) == (2, thread.pk, second.thread_id)

    page = await client.get(f"/threads/{first.thread_id}/workspace/")
    html = page.content.decode()
    assert 'aria-label="Versions of turn 2"' in html and "2/3" in html
    assert f'href="/threads/{thread.pk}/workspace/#turn-2" aria-label="Previous version of turn 2"' in html
    assert f'href="/threads/{second.thread_id}/workspace/#turn-2" aria-label="Next version of turn 2"' in html
    assert 'aria-label="Versions of turn 1"' not in html


async def _frame_with(socket, needle, timeout=5.0):
    from tests.conversations.helpers import frame_containing

    return (await frame_containing(socket, needle, timeout=timeout))[-1]


async def _arrows_patch(socket, *, turn, timeout=5.0):
    """The next live patch that swaps in the version arrows of `turn` (other frames skipped)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        html = await _frame_with(socket, f'id="turn-{turn}-versions"', timeout=max(0.1, deadline - loop.time()))
        if html.startswith('<div hx-swap-oob="beforeend:#live-inbox"><template data-live-patch="swap">'):
            return html


async def test_the_arrows_of_a_new_version_reach_the_open_tabs_of_every_sibling(owner, two_answered_turns, sockets):
    thread = two_answered_turns
    original_tab = await sockets(thread.pk, owner)
    client = await _client(owner)
    await client.post(_url(thread, 2, "edit"), {"message": "edited once"})
    first = await _the_branch(thread)
    # The tab, opened just after the fixture's turn 2 ended, may still hear
    # that turn being announced (its message carries the arrows' placeholder).
    html = await _arrows_patch(original_tab, turn=2)
    # The arrows, put in place of the page's (an empty placeholder until now) and nothing else of the turn.
    assert "1/2" in html and f'href="/threads/{first.thread_id}/workspace/#turn-2" aria-label="Next version of turn 2"' in html
    assert 'id="turn-2"' not in html and len(html) < 1500

    first_tab = await sockets(first.thread_id, owner)
    await client.post(_url(first.thread, 2, "regenerate"))
    second = await database_sync_to_async(BranchLink.objects.get)(parent_id=first.thread_id)
    await registry.wait_for_turn(second.thread_id)
    assert "1/3" in await _arrows_patch(original_tab, turn=2)
    # A tab opened on the first branch may still hear that branch's own turn
    # (the edit's) being announced, whose message also carries the arrows'
    # placeholder: what counts is the patch of the arrows.
    middle = await _arrows_patch(first_tab, turn=2)
    assert "2/3" in middle and f'href="/threads/{second.thread_id}/workspace/#turn-2"' in middle


async def test_a_turn_with_one_version_has_an_empty_placeholder_for_its_arrows(owner, two_answered_turns):
    client = await _client(owner, htmx=False)
    html = (await client.get(f"/threads/{two_answered_turns.pk}/workspace/")).content.decode()
    for turn in (1, 2):
        assert f'<span id="turn-{turn}-versions" hidden></span>' in html


async def test_the_page_offers_regenerate_and_edit_on_every_message(owner, two_answered_turns):
    client = await _client(owner, htmx=False)
    html = (await client.get(f"/threads/{two_answered_turns.pk}/workspace/")).content.decode()
    for turn in (1, 2):
        assert html.count(f'aria-label="Regenerate turn {turn}"') == 1
        assert html.count(f'aria-label="Edit turn {turn}"') == 1
        assert f'action="/threads/{two_answered_turns.pk}/turns/{turn}/edit/"' in html
    assert "csrfmiddlewaretoken" in html


# -- refusals --


async def test_another_persons_thread_is_a_404_and_nothing_is_made(owner, other_user, two_answered_turns):
    client = await _client(other_user, htmx=False)
    for action in ("regenerate", "edit"):
        response = await client.post(_url(two_answered_turns, 2, action), {"message": "mine now"})
        assert response.status_code == 404
    assert await database_sync_to_async(Thread.objects.count)() == 1


async def test_a_turn_that_does_not_exist_is_missing(owner, two_answered_turns):
    client = await _client(owner)
    response = await client.post(_url(two_answered_turns, 3, "regenerate"))
    assert response.status_code == 200 and "no longer exists" in response["HX-Trigger"]
    plain = await _client(owner, htmx=False)
    for action in ("regenerate", "edit"):
        assert (await plain.post(_url(two_answered_turns, 3, action), {"message": "x"})).status_code == 404
    assert await database_sync_to_async(Thread.objects.count)() == 1


async def test_an_empty_edit_is_refused_with_a_message(owner, two_answered_turns):
    client = await _client(owner)
    response = await client.post(_url(two_answered_turns, 2, "edit"), {"message": "   "})
    assert response.status_code == 200 and "Write the message" in response["HX-Trigger"]
    plain = await _client(owner, htmx=False)
    response = await plain.post(_url(two_answered_turns, 2, "edit"), {})
    assert response.status_code == 400
    assert await database_sync_to_async(Thread.objects.count)() == 1


async def test_without_a_model_nothing_is_branched(owner, two_answered_turns, settings):
    settings.OPENAI_BASE_URL = ""
    settings.HAICO_MODELS = []
    settings.HAICO_MODEL = ""
    client = await _client(owner)
    response = await client.post(_url(two_answered_turns, 2, "regenerate"))
    assert response.status_code == 200 and "HX-Redirect" not in response
    assert await database_sync_to_async(Thread.objects.count)() == 1


async def test_get_is_not_allowed_and_anonymous_is_sent_to_log_in(two_answered_turns):
    client = AsyncClient()
    response = await client.post(_url(two_answered_turns, 2, "regenerate"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert await database_sync_to_async(Thread.objects.count)() == 1


async def test_csrf_is_checked(owner, two_answered_turns):
    client = AsyncClient(enforce_csrf_checks=True)
    await client.aforce_login(owner)
    response = await client.post(_url(two_answered_turns, 2, "regenerate"))
    assert response.status_code == 403
    assert await database_sync_to_async(Thread.objects.count)() == 1
