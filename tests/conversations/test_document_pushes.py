"""What another tab gets when the owner's autosave changes the document
(docs/adr/0043): a short document's patch (its text, preview and review),
a long one's stand-in (RESYNC: the tab reads the workspace again), decided
before the patch is rendered, so a long document's autosave never renders
the half megabyte it would throw away."""

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from conversations.live import RESYNC, RESYNC_CHAT, document_resync, message_size, render_changes
from conversations.sharing import thread_member_add
from tests.support.web import ws_url
from workspace import panels
from workspace.events import Change
from workspace.selectors import document_for
from workspace.services import document as document_services

from .helpers import frame_containing

pytestmark = pytest.mark.django_db(transaction=True)


def _report(chars: int) -> str:
    """A report of about `chars` characters, as people write one."""
    section = "## Findings {n}\n\nThe *sample* of {n} customers grew by 4 % & more; see [the table](https://example.com/{n}).\n\n"
    text, n = [], 0
    while sum(map(len, text)) < chars:
        text.append(section.format(n=n))
        n += 1
    return "".join(text)[:chars]


def _autosave(client, thread, content: str) -> None:
    version = document_for(thread=thread).version
    response = client.post(
        ws_url(thread, "document/save/"),
        {"title": "Report", "content": content, "base_version": str(version)},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200 and document_for(thread=thread).version == version + 1, response.content[:300]


@pytest.fixture
async def editors_tab(owner, other_user, thread, sockets):
    await database_sync_to_async(thread_member_add)(thread=thread, who=other_user.username, role="editor", by=owner)
    return await sockets(thread.pk, other_user)


async def test_another_tab_gets_a_short_documents_new_text_and_preview(owner_client, thread, editors_tab):
    await sync_to_async(_autosave)(owner_client, thread, "# Plan\n\nCall **Dr Ruiz** on Monday.")
    frames = await frame_containing(editors_tab, 'data-live-patch="document"')
    assert "Call **Dr Ruiz** on Monday." in frames[-1] and "<strong>Dr Ruiz</strong>" in frames[-1]
    assert RESYNC not in "".join(frames)


async def test_another_tab_is_told_to_read_a_long_document_again_its_patch_never_rendered(
    owner_client, thread, editors_tab, monkeypatch
):
    rendered = []
    render = panels.render_document_patch
    monkeypatch.setattr(panels, "render_document_patch", lambda **kw: rendered.append(kw) or render(**kw))
    await sync_to_async(_autosave)(owner_client, thread, _report(199_000))
    frames = await frame_containing(editors_tab, 'data-live-patch="resync"')
    version = await database_sync_to_async(lambda: document_for(thread=thread).version)()
    # The stand-in names the version, so the saving tab, which has it, reads
    # nothing again; nothing of the chat changed, so no page reads it.
    assert frames[-1] == document_resync(version)
    assert 'data-surfaces="document"' in frames[-1] and RESYNC_CHAT not in frames[-1]
    assert not any("The *sample* of" in frame for frame in frames)
    # The patch the tab could not have been sent was not built either.
    assert rendered == []


@pytest.mark.parametrize(
    "unit",
    [
        "Plain prose, one sentence after another. ",  # the preview about as long as the text
        "<b>&amp;</b> \"quoted\" 'text' <script>x</script>\n\n",  # escaped in the text, dropped from the preview
        "[label]: https://example.com/a\n\n",  # a reference: nothing in the preview
        "Ünïcödé 🎉 texte accentué\n\n",  # several bytes a character
        "* a\n",  # the preview several times the text
    ],
)
def test_a_document_patch_is_refused_only_when_it_would_not_fit(thread, unit):
    document_services.document_save(thread=thread, title="Report", content=unit * (60_000 // len(unit)))
    changes = [Change(thread_id=thread.pk, surface="document")]
    size = message_size(panels.render_changes(thread, changes))
    # Just over the patch: it fits, and is rendered as before.
    assert panels.render_changes_within(thread, changes, max_bytes=size) == panels.render_changes(thread, changes)
    # Any limit it is refused under is one it is over.
    for limit in (size - 1, size // 2, len(document_for(thread=thread).content) - 1):
        refused = panels.render_changes_within(thread, changes, max_bytes=limit) is None
        assert not refused or size > limit


def test_a_long_documents_stand_in_with_another_surface_changed_has_every_page_read_all_again(thread):
    """A plan change (or the agent's artifact) in the same push as a long
    document is not the document's alone: its stand-in names no version, so
    even the tab that has the document reads the workspace, and the chat."""
    document_services.document_save(thread=thread, title="Report", content=_report(199_000))
    document_only = [Change(thread_id=thread.pk, surface="document")]
    with_plan = [*document_only, Change(thread_id=thread.pk, surface="plan", reordered=True)]
    assert render_changes(thread, document_only) == document_resync(document_for(thread=thread).version)
    assert render_changes(thread, with_plan) == RESYNC
