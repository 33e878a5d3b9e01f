"""Sharing a thread (conversations.sharing, docs/adr/0084): the owner adds
people as viewer or editor, changes and removes them, makes and revokes a
read-only link; each change takes effect at once, on the next request, the
next MCP call and the open sockets. Personas: the owner, an editor, a viewer,
a link viewer, staff, another person."""

import json
import re
import uuid

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.urls import reverse

from conversations import services as conversation_services
from conversations import sharing
from conversations.approval import account_hold_for_approval
from conversations.branching import fork_thread
from conversations.consumers import CLOSE_NOT_FOUND, NOT_FOUND_MESSAGE, ROLE_LOWERED_MESSAGE, VIEW_ONLY_MESSAGE
from conversations.mcp_server import THREAD_FIELD, call_tool
from conversations.models import ModerationAction
from conversations.tokens import token_create
from conversations.turns import slot
from tests.conversations.helpers import frames_until_closed
from tests.support.web import HTMX, database_rows
from workspace.errors import InvalidInput
from workspace.models import Preference, ThreadMember, Todo
from workspace.selectors import Access, access_to, thread_for_user
from workspace.services import plan as plan_services

WHY = "Sharing test."


@pytest.fixture
def people(django_user_model):
    return {
        name: django_user_model.objects.create_user(username=name, email=f"{name}@example.com", password="pw-123456")
        for name in ("ed", "vi", "li")
    }


def _members(thread):
    return sorted(ThreadMember.objects.filter(thread=thread).values_list("user__username", "role", "via_link"))


# --- the services -----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_owner_adds_people_by_username_or_email_with_a_role(thread, owner, people):
    sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    sharing.thread_member_add(thread=thread, who="VI@example.com", role="viewer", by=owner)

    assert _members(thread) == [("ed", "editor", False), ("vi", "viewer", False)]
    assert access_to(user=people["ed"], thread=thread) is Access.EDIT
    assert access_to(user=people["vi"], thread=thread) is Access.VIEW
    assert access_to(user=owner, thread=thread) is Access.OWN
    assert not ModerationAction.objects.exists()  # the owner's own changes are no moderation


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("who", "message"),
    [
        ("nobody", "No one here has the username or email “nobody”."),
        ("", "Enter the username or email of the person to add."),
        ("owner", "That is the thread's owner; the owner always has the thread."),
        ("ed", "ed is on this thread already, as viewer."),
        # An account that cannot sign in is answered as no account (docs/adr/0137).
        ("sleeper", "No one here has the username or email “sleeper”."),
        ("waiter", "No one here has the username or email “waiter”."),
        ("sleeper@example.com", "No one here has the username or email “sleeper@example.com”."),
    ],
)
def test_adding_a_person_who_cannot_be_added_says_why_and_changes_nothing(thread, owner, people, who, message):
    sharing.thread_member_add(thread=thread, who="ed", role="viewer", by=owner)
    get_user_model().objects.create_user(username="sleeper", email="sleeper@example.com", is_active=False)
    account_hold_for_approval(user=get_user_model().objects.create_user(username="waiter"))
    before = _members(thread)

    with pytest.raises(InvalidInput) as refused:
        sharing.thread_member_add(thread=thread, who=who, role="editor", by=owner)

    assert refused.value.message == message
    assert _members(thread) == before


@pytest.mark.django_db
def test_an_email_two_accounts_share_asks_for_the_username_and_an_exact_username_wins(thread, owner, people):
    get_user_model().objects.create_user(username="Ed", email="shared@example.com")
    get_user_model().objects.create_user(username="eddie", email="shared@example.com")

    with pytest.raises(InvalidInput, match="More than one account matches “shared@example.com”; enter the exact username."):
        sharing.thread_member_add(thread=thread, who="shared@example.com", role="viewer", by=owner)
    sharing.thread_member_add(thread=thread, who="Ed", role="viewer", by=owner)

    assert _members(thread) == [("Ed", "viewer", False)]


@pytest.mark.django_db
def test_a_role_change_and_a_removal_take_effect_on_the_next_lookup(thread, owner, people):
    member = sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)

    sharing.thread_member_set_role(thread=thread, member_id=member.pk, role="viewer", by=owner)
    assert thread_for_user(user=people["ed"], thread_id=thread.pk, level=Access.EDIT) is None
    assert thread_for_user(user=people["ed"], thread_id=thread.pk, level=Access.VIEW) == thread

    sharing.thread_member_remove(thread=thread, member_id=member.pk, by=owner)
    assert thread_for_user(user=people["ed"], thread_id=thread.pk, level=Access.VIEW) is None
    with pytest.raises(InvalidInput):
        sharing.thread_member_remove(thread=thread, member_id=member.pk, by=owner)


@pytest.mark.django_db
def test_revoking_the_link_takes_every_access_it_gave_and_a_new_link_is_a_new_secret(thread, owner, people):
    key = sharing.share_link_create(thread=thread, by=owner)
    assert sharing.share_link_open(user=people["li"], key=key) == thread
    # Someone added by name keeps their access; only the link's viewers go.
    sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    assert sharing.share_link_open(user=people["ed"], key=key) == thread
    assert _members(thread) == [("ed", "editor", False), ("li", "viewer", True)]

    sharing.share_link_revoke(thread=thread, by=owner)

    assert _members(thread) == [("ed", "editor", False)]
    assert sharing.share_link_open(user=people["li"], key=key) is None
    new_key = sharing.share_link_create(thread=thread, by=owner)
    assert new_key != key and sharing.share_link_open(user=people["vi"], key=key) is None


@pytest.mark.django_db
def test_an_account_waiting_for_approval_gets_nothing_from_the_link(thread, owner):
    waiter = account_hold_for_approval(user=get_user_model().objects.create_user(username="waiter")).user
    assert sharing.share_link_open(user=waiter, key=sharing.share_link_create(thread=thread, by=owner)) is None
    assert _members(thread) == []


@pytest.mark.django_db
def test_adding_a_link_viewer_by_name_makes_them_a_member_the_link_no_longer_decides(thread, owner, people):
    sharing.share_link_open(user=people["li"], key=sharing.share_link_create(thread=thread, by=owner))
    sharing.thread_member_add(thread=thread, who="li", role="editor", by=owner)
    sharing.share_link_revoke(thread=thread, by=owner)
    assert _members(thread) == [("li", "editor", False)]


@pytest.mark.django_db
def test_share_changes_made_by_staff_are_in_the_moderation_log(thread, staff, people):
    member = sharing.thread_member_add(thread=thread, who="ed", role="viewer", by=staff)
    sharing.thread_member_set_role(thread=thread, member_id=member.pk, role="editor", by=staff)
    sharing.thread_member_remove(thread=thread, member_id=member.pk, by=staff)

    details = list(
        ModerationAction.objects.filter(thread=thread, staff_user=staff).order_by("id").values_list("action", "detail")
    )
    assert details == [
        ("share", "Shared with ed as Viewer"),
        ("share", "ed made Editor"),
        ("share", "Removed ed"),
    ]


# --- the dialog and the thread list -------------------------------------------------------


@pytest.mark.django_db
def test_the_owner_shares_through_the_dialog_and_sees_the_refusals_in_it(client, thread, owner, people):
    client.force_login(owner)
    url = reverse("conversations:share-add", kwargs={"thread_id": thread.pk})

    added = client.post(url, {"who": "ed", "role": "editor"}, **HTMX)
    again = client.post(url, {"who": "ed", "role": "viewer"}, **HTMX)

    assert added.status_code == 200 and "ed can now edit this thread." in added.content.decode()
    assert again.status_code == 200 and "ed is on this thread already, as editor." in again.content.decode()
    assert _members(thread) == [("ed", "editor", False)]


def _share(client, thread, who, role="viewer"):
    return client.post(reverse("conversations:share-add", kwargs={"thread_id": thread.pk}), {"who": who, "role": role}, **HTMX)


@pytest.mark.django_db(transaction=True)
def test_the_dialog_names_a_person_added_by_email_as_the_owner_typed_it_not_by_their_username(
    client, thread, owner, django_user_model
):
    """Anyone can own a thread: the dialog's answer is not where an email is matched to a username (docs/adr/0137)."""
    colleague = django_user_model.objects.create_user(username="hidden_handle_42", email="ceo@corp.example")
    client.force_login(owner)

    added = _share(client, thread, "CEO@corp.example").content.decode()
    again = _share(client, thread, "CEO@corp.example").content.decode()

    assert "CEO@corp.example can now view this thread." in added
    assert "CEO@corp.example is on this thread already, as viewer." in again
    # The people on the thread are listed as the owner named them.
    assert '<span class="share-name" id="share-person-' in added and ">CEO@corp.example</span>" in added
    assert "hidden_handle_42" not in added and "hidden_handle_42" not in again
    assert access_to(user=colleague, thread=thread) is Access.VIEW
    # A branch's dialog names them the same way; an owner who adds them by username sees the username.
    turn, _ = slot.turn_begin(thread=thread, user_message="First")
    slot.turn_finish(thread=thread, turn_index=turn)
    branch = fork_thread(source=thread, turn_index=turn, user=owner)
    dialog = client.get(reverse("conversations:share", kwargs={"thread_id": branch.pk}), **HTMX).content.decode()
    assert ">CEO@corp.example</span>" in dialog and "hidden_handle_42" not in dialog
    sharing.thread_member_remove(thread=thread, member_id=ThreadMember.objects.get(thread=thread).pk, by=owner)
    assert "hidden_handle_42 can now view" in _share(client, thread, "hidden_handle_42").content.decode()


@pytest.mark.django_db
def test_the_dialog_answers_an_account_that_cannot_sign_in_exactly_as_no_account(client, thread, owner, django_user_model):
    """A deactivated account or one waiting for approval: no username, no state, nobody added."""
    django_user_model.objects.create_user(username="banned_person", email="banned@corp.example", is_active=False)
    account_hold_for_approval(user=django_user_model.objects.create_user(username="waiting_one", email="wait@corp.example"))
    client.force_login(owner)

    def answer_to(who):  # the dialog as answered, but for its form's one-time token
        return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", _share(client, thread, who).content.decode())

    answers = {who: answer_to(who) for who in ("banned@corp.example", "wait@corp.example")}
    nobody = answer_to("nobody@corp.example")

    for who, answer in answers.items():
        assert answer == nobody.replace("nobody@corp.example", who)
        assert "banned_person" not in answer and "waiting_one" not in answer and "cannot sign in" not in answer
    assert _members(thread) == []


@pytest.mark.django_db
def test_one_person_looks_up_only_so_many_emails_a_day_and_exact_usernames_always(client, thread, owner, people, settings):
    """Matching emails to accounts at scale stops at the limit; sharing by exact username goes on."""
    settings.HAICO_RATE_SHARE_LOOKUPS = "2/day"
    client.force_login(owner)

    assert "No one here" in _share(client, thread, "a@corp.example").content.decode()
    assert "vi@example.com can now view" in _share(client, thread, "vi@example.com").content.decode()
    refused = _share(client, thread, "li@example.com").content.decode()

    assert "You have looked up many people by email lately; try again in" in refused
    assert "ed can now view this thread." in _share(client, thread, "ed").content.decode()
    assert _members(thread) == [("ed", "viewer", False), ("vi", "viewer", False)]


@pytest.mark.django_db
def test_staff_changing_the_people_of_a_thread_give_no_staff_account_access_and_the_owner_may(
    thread, owner, people, staff, django_user_model
):
    """Staff are not members (docs/adr/0084): not themselves, not a colleague, as a new row or made editor."""
    colleague = django_user_model.objects.create_user(username="colleague", is_staff=True)
    for who in ("staff", "colleague"):
        with pytest.raises(InvalidInput, match="Staff are not members of the threads they moderate"):
            sharing.thread_member_add(thread=thread, who=who, role="viewer", by=staff)
    member = sharing.thread_member_add(thread=thread, who="colleague", role="viewer", by=owner)
    with pytest.raises(InvalidInput, match="Staff are not members"):
        sharing.thread_member_set_role(thread=thread, member_id=member.pk, role="editor", by=staff)
    sharing.thread_member_add(thread=thread, who="ed", role="viewer", by=staff)

    assert _members(thread) == [("colleague", "viewer", False), ("ed", "viewer", False)]
    assert access_to(user=colleague, thread=thread) is Access.VIEW


@pytest.mark.django_db
def test_only_the_owner_sees_the_share_button(client, thread, owner, people):
    sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    page = reverse("thread-page", kwargs={"thread_id": thread.pk})
    client.force_login(owner)
    assert "data-share-open" in client.get(page).content.decode()
    client.force_login(people["ed"])
    html = client.get(page).content.decode()
    assert "data-share-open" not in html and "Rename thread" not in html and "Editor" in html


@pytest.mark.django_db
def test_the_thread_list_shows_shared_threads_apart_with_the_owners_name(client, thread, owner, people):
    sharing.thread_member_add(thread=thread, who="vi", role="viewer", by=owner)
    client.force_login(people["vi"])

    html = client.get(reverse("conversations:list")).content.decode()

    shared = html.split("Shared with me", 1)
    assert len(shared) == 2 and thread.title in shared[1] and "Viewer, shared by owner" in shared[1]
    assert thread.title not in shared[0]


@pytest.mark.django_db
def test_the_link_makes_a_signed_in_person_a_viewer_and_a_revoked_one_is_not_found(client, thread, owner, people):
    key = sharing.share_link_create(thread=thread, by=owner)
    link = reverse("conversations:share-link", kwargs={"key": key})
    client.force_login(people["li"])

    opened = client.get(link)

    assert opened.status_code == 302 and opened["Location"] == reverse("thread-page", kwargs={"thread_id": thread.pk})
    assert client.get(opened["Location"]).status_code == 200
    sharing.share_link_revoke(thread=thread, by=owner)
    assert client.get(opened["Location"]).status_code == 404
    before = database_rows()
    assert client.get(link).status_code == 404
    assert database_rows() == before


# --- MCP ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_editors_token_writes_a_viewers_only_reads_and_a_removed_persons_reaches_nothing(thread, owner, people):
    editor = sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    sharing.thread_member_add(thread=thread, who="vi", role="viewer", by=owner)
    add = {THREAD_FIELD: str(thread.pk), "action_and_reasoning": WHY, "items": [{"title": "Short", "kind": "soft"}]}
    read = {THREAD_FIELD: str(thread.pk)}
    editor_token = token_create(user=people["ed"], name="ed's laptop")[0]
    viewer_token = token_create(user=people["vi"], name="vi's laptop")[0]

    assert not call_tool(editor_token, "add_preferences", dict(add)).is_error
    assert not call_tool(viewer_token, "get_workspace", dict(read)).is_error
    refused = call_tool(viewer_token, "add_preferences", dict(add))
    # The viewer is told why: the thread is among those list_threads gives them.
    assert refused.is_error and "You can view this thread but not change it" in refused.text
    listed = json.loads(call_tool(viewer_token, "list_threads", {}).text)["threads"]
    assert [t["id"] for t in listed] == [str(thread.pk)]

    sharing.thread_member_remove(thread=thread, member_id=editor.pk, by=owner)
    assert call_tool(editor_token, "get_workspace", dict(read)).is_error
    assert call_tool(editor_token, "add_preferences", dict(add)).is_error
    assert list(Preference.objects.filter(thread=thread).values_list("title", flat=True)) == ["Short"]


# --- branches -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_branch_an_editor_makes_is_the_owners_with_the_same_people(thread, owner, people):
    from conversations.branching import BranchRefused, fork_thread
    from conversations.turns import slot

    sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    sharing.thread_member_add(thread=thread, who="vi", role="viewer", by=owner)
    sharing.share_link_open(user=people["li"], key=sharing.share_link_create(thread=thread, by=owner))
    turn, _ = slot.turn_begin(thread=thread, user_message="First")
    slot.turn_finish(thread=thread, turn_index=turn)

    branch = fork_thread(source=thread, turn_index=1, user=people["ed"], reason="test")

    assert branch.owner == owner
    assert _members(branch) == [("ed", "editor", False), ("li", "viewer", True), ("vi", "viewer", False)]
    with pytest.raises(BranchRefused):
        fork_thread(source=thread, turn_index=1, user=people["vi"], reason="test")
    # The link's viewers leave the whole family when it is revoked.
    sharing.share_link_revoke(thread=thread, by=owner)
    assert thread_for_user(user=people["li"], thread_id=branch.pk, level=Access.VIEW) is None


@pytest.mark.django_db(transaction=True)
def test_sharing_a_thread_shares_its_branches_and_a_removal_leaves_them_all(thread, owner, people):
    """The map and a turn's versions show and link every branch of the
    family: whoever is on one thread of it is on all, with one role."""
    from conversations.branching import fork_thread
    from conversations.turns import slot

    turn, _ = slot.turn_begin(thread=thread, user_message="First")
    slot.turn_finish(thread=thread, turn_index=turn)
    branch = fork_thread(source=thread, turn_index=1, user=owner, reason="made before sharing")

    member = sharing.thread_member_add(thread=branch, who="ed", role="viewer", by=owner)
    assert access_to(user=people["ed"], thread=thread) is Access.VIEW
    sharing.thread_member_set_role(thread=branch, member_id=member.pk, role="editor", by=owner)
    assert access_to(user=people["ed"], thread=thread) is Access.EDIT

    parent_row = ThreadMember.objects.get(thread=thread, user=people["ed"])
    sharing.thread_member_remove(thread=thread, member_id=parent_row.pk, by=owner)
    assert access_to(user=people["ed"], thread=thread) is None
    assert access_to(user=people["ed"], thread=branch) is None


def _ended_turns(thread, count):
    from conversations.turns import slot

    for _ in range(count):
        turn, _ = slot.turn_begin(thread=thread, user_message="A message")
        slot.turn_finish(thread=thread, turn_index=turn)


@pytest.mark.django_db(transaction=True)
def test_a_branch_left_on_its_own_by_a_deleted_parent_is_shared_alone_and_a_removal_reaches_its_deleted_parent(owner, people):
    """Root → Middle → Child, and Root → Sibling. Middle deleted: the list
    and the map show Child as a family of its own, so sharing Child (by
    name, a role raised, or its link) gives nothing of Root or Sibling. A
    person who had the whole family before the deletion, removed from
    Child, loses Child and the deleted Middle (a restore gives it nothing
    back), not Root's family, whose own dialog still lists them
    (docs/adr/0084)."""
    from conversations.branching import fork_thread
    from conversations.services import thread_create, thread_soft_delete

    root = thread_create(owner=owner, title="Root")
    _ended_turns(root, 3)
    sharing.thread_member_add(thread=root, who="ed", role="viewer", by=owner)
    middle = fork_thread(source=root, turn_index=2, user=owner)
    _ended_turns(middle, 1)
    child = fork_thread(source=middle, turn_index=3, user=owner)
    sibling = fork_thread(source=root, turn_index=1, user=owner)
    thread_soft_delete(thread=middle)

    vi = sharing.thread_member_add(thread=child, who="vi", role="viewer", by=owner)
    sharing.thread_member_set_role(thread=child, member_id=vi.pk, role="editor", by=owner)
    link = sharing.share_link_create(thread=child, by=owner)
    sharing.share_link_open(user=people["li"], key=link)
    for name in ("vi", "li"):
        assert access_to(user=people[name], thread=child) is not None
        assert access_to(user=people[name], thread=root) is None, name
        assert access_to(user=people[name], thread=sibling) is None, name

    ed_on_child = ThreadMember.objects.get(thread=child, user=people["ed"])
    sharing.thread_member_remove(thread=child, member_id=ed_on_child.pk, by=owner)
    assert [access_to(user=people["ed"], thread=t) for t in (root, middle, child, sibling)] == [
        Access.VIEW,
        None,
        None,
        Access.VIEW,
    ]
    assert not ThreadMember.objects.filter(thread__in=(middle, child), user=people["ed"]).exists()


@pytest.mark.django_db(transaction=True)
def test_a_branch_still_being_made_follows_a_removal_a_role_change_and_a_new_person(thread, owner, people):
    """An editor's Regenerate copies the people to its branch before the
    branch's turn begins; a share change made in that moment reaches the
    branch too, so the owner's dialog is the truth for the whole family."""
    from conversations.branching import write_pending_rows
    from conversations.turns import slot

    editor = sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    viewer = sharing.thread_member_add(thread=thread, who="vi", role="editor", by=owner)
    turn, _ = slot.turn_begin(thread=thread, user_message="First")
    slot.turn_finish(thread=thread, turn_index=turn)
    branch = write_pending_rows(new_id=uuid.uuid4(), source=thread, turn_index=1, user=people["ed"], reason="regenerate")
    assert _members(branch) == [("ed", "editor", False), ("vi", "editor", False)]

    sharing.thread_member_remove(thread=thread, member_id=editor.pk, by=owner)
    sharing.thread_member_set_role(thread=thread, member_id=viewer.pk, role="viewer", by=owner)
    sharing.thread_member_add(thread=thread, who="li", role="viewer", by=owner)

    assert _members(branch) == _members(thread) == [("li", "viewer", False), ("vi", "viewer", False)]


@pytest.mark.django_db(transaction=True)
def test_a_removal_made_while_an_editor_branches_waits_for_the_branch_and_reaches_it(thread, owner, people):
    """The editor's branch copies the people in its transaction; the owner's
    removal, made at that moment, waits for it and then takes the editor off
    the branch too, on either database."""
    import threading
    import time

    from django.db import connections, transaction

    from conversations.branching import write_pending_rows
    from conversations.turns import slot

    editor = sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    turn, _ = slot.turn_begin(thread=thread, user_message="First")
    slot.turn_finish(thread=thread, turn_index=turn)
    copied, release, made = threading.Event(), threading.Event(), {}

    def branch():
        try:
            with transaction.atomic():
                made["branch"] = write_pending_rows(
                    new_id=uuid.uuid4(), source=thread, turn_index=1, user=people["ed"], reason="regenerate"
                )
                copied.set()
                release.wait(10)
        finally:
            connections.close_all()

    def remove():
        try:
            sharing.thread_member_remove(thread=thread, member_id=editor.pk, by=owner)
        finally:
            connections.close_all()

    brancher = threading.Thread(target=branch)
    brancher.start()
    assert copied.wait(10)
    remover = threading.Thread(target=remove)
    remover.start()
    time.sleep(0.3)
    assert remover.is_alive(), "the removal did not wait for the branch being made"
    release.set()
    brancher.join(10)
    remover.join(10)

    assert _members(made["branch"]) == _members(thread) == []


@pytest.mark.django_db(transaction=True)
def test_a_branch_exported_and_imported_back_into_a_shared_family_has_its_people(thread, owner, people):
    """The import links back to the thread it branched from, so the family's
    map links it for everyone on the family: it has the same people (it had
    none, and the editor's map showed what the owner wrote in it)."""
    from conversations.archive import archive_bytes, import_archive
    from conversations.branching import fork_thread
    from conversations.selectors import family_ids
    from conversations.turns import slot

    sharing.thread_member_add(thread=thread, who="ed", role="editor", by=owner)
    turn, _ = slot.turn_begin(thread=thread, user_message="First")
    slot.turn_finish(thread=thread, turn_index=turn)
    branch = fork_thread(source=thread, turn_index=1, user=owner, reason="test")

    imported = import_archive(raw=archive_bytes(branch), owner=owner)

    assert imported.pk in family_ids(thread_id=thread.pk)
    assert _members(imported) == _members(thread) == [("ed", "editor", False)]


# --- the open sockets ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_removing_a_person_closes_their_open_socket_at_once(thread, owner, people, sockets):
    member = await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    theirs = await sockets(thread.pk, people["ed"])
    owners = await sockets(thread.pk, owner)

    await sync_to_async(sharing.thread_member_remove)(thread=thread, member_id=member.pk, by=owner)

    frames, closed = await frames_until_closed(theirs)
    assert closed == CLOSE_NOT_FOUND and any(NOT_FOUND_MESSAGE in f for f in frames)
    # The owner's socket stays.
    assert await owners.receive_nothing(timeout=0.3)


WORDS = " ".join(f"w{n}" for n in range(1, 81))


def _words(frames) -> list[int]:
    """The answer's words w1, w2, … in what a page was pushed, in order."""
    return [int(n) for frame in frames for n in re.findall(r"\bw(\d+)\b", frame)]


def _slow_access_checks(monkeypatch):
    """The socket's access check waits its turn on the process's database
    thread behind other pages' and turns' work: half a second on a busy server."""
    import time

    from conversations import consumers

    real = consumers.thread_and_access_for_user

    def slow(**kwargs):
        time.sleep(0.5)
        return real(**kwargs)

    monkeypatch.setattr(consumers, "thread_and_access_for_user", slow)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("busy", [False, True])
@pytest.mark.parametrize("change", ["removed", "link revoked"])
async def test_a_person_removed_mid_answer_is_shown_no_more_of_it_nor_the_next_changes(
    thread, owner, people, sockets, script, change, busy, monkeypatch
):
    import asyncio

    from conversations.turns import registry
    from tests.conversations.helpers import frame_containing, frames_until_turn_end
    from tests.support.fake_model import Reply

    if busy:
        _slow_access_checks(monkeypatch)
    if change == "removed":
        member = await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    else:
        key = await sync_to_async(sharing.share_link_create)(thread=thread, by=owner)
        await sync_to_async(sharing.share_link_open)(user=people["ed"], key=key)
    script(Reply(text=WORDS, token_delay=0.04))
    owners = await sockets(thread.pk, owner)
    theirs = await sockets(thread.pk, people["ed"])
    await registry.start_turn(thread=thread, user_message="Write it all", user=owner)
    before = await frame_containing(theirs, "w10</div>")

    if change == "removed":
        await sync_to_async(sharing.thread_member_remove)(thread=thread, member_id=member.pk, by=owner)
    else:
        await sync_to_async(sharing.share_link_revoke)(thread=thread, by=owner)
    await asyncio.sleep(0.1)
    await sync_to_async(plan_services.todo_add)(thread=thread, text="Salary bands for the reorg")

    after, closed = await frames_until_closed(theirs)
    assert closed == CLOSE_NOT_FOUND
    assert not any("Salary bands" in f for f in after)
    # At most what was already on its way when the removal committed.
    assert max(_words(after), default=0) <= max(_words(before)) + 3, (max(_words(before)), _words(after))
    # The owner's answer goes on to its end.
    assert "w80" in "".join(await frames_until_turn_end(owners, timeout=15))


@pytest.mark.django_db(transaction=True)
async def test_an_editor_whose_access_is_checked_mid_answer_and_stays_misses_no_word_of_it(
    thread, owner, people, sockets, script, monkeypatch
):
    """Revoking the link makes every page of the thread ask its access again:
    an editor added by name keeps it, and is shown every word of the answer
    in order, those held while the check ran included."""
    from conversations.turns import registry
    from tests.conversations.helpers import frame_containing, frames_until_turn_end
    from tests.support.fake_model import Reply

    _slow_access_checks(monkeypatch)
    await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    await sync_to_async(sharing.share_link_create)(thread=thread, by=owner)
    script(Reply(text=WORDS, token_delay=0.02))
    theirs = await sockets(thread.pk, people["ed"])
    await registry.start_turn(thread=thread, user_message="Write it all", user=owner)
    before = await frame_containing(theirs, "w10</div>")

    await sync_to_async(sharing.share_link_revoke)(thread=thread, by=owner)

    frames = before + await frames_until_turn_end(theirs, timeout=15)
    # Before the turn's end (which draws the answer whole): each word once, in order, none missing.
    streamed = _words(frames[:-1])
    assert streamed == list(range(1, len(streamed) + 1)) and len(streamed) > 20
    assert "w80" in frames[-1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("change", ["removed", "made viewer"])
async def test_a_turn_the_editor_started_stops_when_they_lose_editing(
    thread, owner, people, sockets, script, monkeypatch, change
):
    from conversations.models import Turn
    from conversations.turns import registry
    from tests.conversations.helpers import frame_containing, frames_until_turn_end
    from tests.support.fake_model import Reply

    monkeypatch.setattr(registry, "CANCEL_POLL_SECONDS", 0.05)
    member = await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    script(Reply(text="one two three four five six seven eight nine ten", token_delay=0.1))
    owners = await sockets(thread.pk, owner)
    await registry.start_turn(thread=thread, user_message="Write it all", user=people["ed"])
    await frame_containing(owners, "two</div>")

    if change == "removed":
        await sync_to_async(sharing.thread_member_remove)(thread=thread, member_id=member.pk, by=owner)
    else:
        await sync_to_async(sharing.thread_member_set_role)(thread=thread, member_id=member.pk, role="viewer", by=owner)

    frames = await frames_until_turn_end(owners)
    assert "Stopped" in frames[-1] and "eight nine" not in frames[-1]
    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.status == Turn.Status.STOPPED


@pytest.mark.django_db(transaction=True)
async def test_a_card_of_a_removed_editors_turn_approved_by_the_owner_stops_the_turn_and_changes_nothing(
    thread, owner, people, script
):
    import asyncio

    from conversations.models import Turn
    from conversations.turns import approval_claims, registry
    from tests.support.fake_model import Reply, tool_call
    from workspace.services import preferences as preference_services

    member = await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    await sync_to_async(preference_services.preferences_add)(
        thread=thread, items=[{"title": "Formal tone", "kind": "soft"}], respect_lock=False
    )
    script(
        Reply(tool_calls=[tool_call("remove_preferences", "Dropping it, as Ed asked.", indices=[1])]),
        Reply(tool_calls=[tool_call("add_todos", "Planning for Ed.", steps=[{"text": "Ed's step", "depth": 0}])]),
        Reply(text="Done for Ed."),
    )
    await registry.start_turn(thread=thread, user_message="Drop the formal tone", user=people["ed"])
    for _ in range(200):
        turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
        if turn.status == Turn.Status.AWAITING:
            break
        await asyncio.sleep(0.05)
    await sync_to_async(sharing.thread_member_remove)(thread=thread, member_id=member.pk, by=owner)

    await registry.answer_approval(thread=thread, turn=1, decision=approval_claims.APPROVED, person=owner)
    await registry.wait_for_turn(thread.pk)

    turn = await sync_to_async(Turn.objects.get)(thread=thread, index=1)
    assert turn.status == Turn.Status.STOPPED and turn.approval["decision"] == approval_claims.STOPPED
    assert await sync_to_async(lambda: list(Preference.objects.filter(thread=thread).values_list("title", flat=True)))() == [
        "Formal tone"
    ]
    assert not await sync_to_async(Todo.objects.filter(thread=thread).exists)()


@pytest.mark.django_db(transaction=True)
async def test_revoking_the_link_closes_the_link_viewers_sockets(thread, owner, people, sockets):
    key = await sync_to_async(sharing.share_link_create)(thread=thread, by=owner)
    await sync_to_async(sharing.share_link_open)(user=people["li"], key=key)
    theirs = await sockets(thread.pk, people["li"])

    await sync_to_async(sharing.share_link_revoke)(thread=thread, by=owner)

    _frames, closed = await frames_until_closed(theirs)
    assert closed == CLOSE_NOT_FOUND


@pytest.mark.django_db(transaction=True)
async def test_an_editor_made_viewer_is_told_and_their_next_write_is_refused(thread, owner, people, sockets):
    member = await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    theirs = await sockets(thread.pk, people["ed"])

    await sync_to_async(sharing.thread_member_set_role)(thread=thread, member_id=member.pk, role="viewer", by=owner)
    assert ROLE_LOWERED_MESSAGE in await theirs.receive_from(timeout=3)

    before = await sync_to_async(database_rows)()
    await theirs.send_to(text_data=json.dumps({"message": "Change things", "HEADERS": {}}))
    assert VIEW_ONLY_MESSAGE in await theirs.receive_from(timeout=3)
    assert await sync_to_async(database_rows)() == before


@pytest.mark.django_db(transaction=True)
async def test_a_viewers_page_sees_the_changes_live(thread, owner, people, sockets):
    await sync_to_async(sharing.thread_member_add)(thread=thread, who="vi", role="viewer", by=owner)
    theirs = await sockets(thread.pk, people["vi"])

    await sync_to_async(plan_services.todo_add)(thread=thread, text="Seen by the viewer")

    assert "Seen by the viewer" in await theirs.receive_from(timeout=3)
    assert await sync_to_async(Todo.objects.filter(thread=thread).count)() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.redis
async def test_a_removal_made_on_another_server_process_closes_the_socket_through_redis(
    thread, owner, people, sockets, settings, redis_url, monkeypatch
):
    from channels_redis.core import RedisChannelLayer

    prefix = f"haico-test-{uuid.uuid4().hex[:8]}"
    hosts = [redis_url.rsplit("/", 1)[0] + "/11"]
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": hosts, "prefix": prefix}}
    }
    # The process that removes the person is not the one holding the socket: its own layer, the same Redis.
    other_process = RedisChannelLayer(hosts=hosts, prefix=prefix)
    monkeypatch.setattr(sharing, "get_channel_layer", lambda: other_process)
    member = await sync_to_async(sharing.thread_member_add)(thread=thread, who="ed", role="editor", by=owner)
    theirs = await sockets(thread.pk, people["ed"])

    await sync_to_async(sharing.thread_member_remove)(thread=thread, member_id=member.pk, by=owner)

    _frames, closed = await frames_until_closed(theirs, timeout=5)
    assert closed == CLOSE_NOT_FOUND


# --- names the dialog lists (docs/adr/0137): no answer or change of the list ties an email to a username ---


def _dialog_of(client, thread) -> str:
    return client.get(reverse("conversations:share", kwargs={"thread_id": thread.pk}), **HTMX).content.decode()


def _listed(html) -> list[str]:
    return re.findall(r'<span class="share-name" id="share-person-\d+">([^<]*)</span>', html)


def _without_tokens(html) -> str:
    return re.sub(r'(name="csrfmiddlewaretoken" value="[^"]*"|share-person-\d+|/share/names/\d+/)', "", html)


@pytest.mark.django_db
def test_typing_a_guessed_username_after_adding_by_email_is_answered_as_any_other_add(client, thread, owner, django_user_model):
    """After ceo@corp.example was added, "hidden_handle_42 is on this thread
    already" confirmed the email's username (unlimited: exact usernames are
    never counted), while a wrong guess was simply added."""
    colleague = django_user_model.objects.create_user(username="hidden_handle_42", email="ceo@corp.example")
    django_user_model.objects.create_user(username="someone_else", email="x@corp.example")
    client.force_login(owner)
    assert "ceo@corp.example can now view" in _share(client, thread, "ceo@corp.example").content.decode()

    wrong = _share(client, thread, "someone_else", role="editor").content.decode()
    right = _share(client, thread, "hidden_handle_42", role="editor").content.decode()

    assert "someone_else can now edit this thread." in wrong
    assert "hidden_handle_42 can now edit this thread." in right and "already" not in right
    # Each name is a line of its own, with the role given under it.
    assert _listed(right) == ["ceo@corp.example", "hidden_handle_42", "someone_else"]
    assert access_to(user=colleague, thread=thread) is Access.EDIT
    assert _members(thread) == [("hidden_handle_42", "editor", False), ("someone_else", "editor", False)]

    # Changing or removing one line changes that line only, whoever it names.
    lines = dict(ThreadMember.objects.get(thread=thread, user=colleague).names.values_list("name", "pk"))
    role_url = reverse("conversations:share-role", kwargs={"thread_id": thread.pk, "pk": lines["hidden_handle_42"]})
    after_role = client.post(role_url, {"role": "viewer"}, **HTMX).content.decode()
    assert "hidden_handle_42 is now viewer." in after_role
    assert _listed(after_role) == ["ceo@corp.example", "hidden_handle_42", "someone_else"]
    remove_url = reverse("conversations:share-remove", kwargs={"thread_id": thread.pk, "pk": lines["hidden_handle_42"]})
    removed = client.post(remove_url, **HTMX).content.decode()
    assert "Removed hidden_handle_42: the thread is no longer shared under that name." in removed
    assert _listed(removed) == ["ceo@corp.example", "someone_else"]
    # Still on the thread under the email the owner gave; that line's removal takes the thread.
    assert access_to(user=colleague, thread=thread) is Access.VIEW
    client.post(reverse("conversations:share-remove", kwargs={"thread_id": thread.pk, "pk": lines["ceo@corp.example"]}), **HTMX)
    assert access_to(user=colleague, thread=thread) is None


@pytest.mark.django_db
def test_adding_by_email_a_person_who_came_by_the_link_changes_the_list_as_for_anyone(client, thread, owner, django_user_model):
    """A link viewer listed as hidden_handle_42 turned into the
    ceo@corp.example line when the owner typed that email: the list told
    which username the email is."""
    colleague = django_user_model.objects.create_user(username="hidden_handle_42", email="ceo@corp.example")
    django_user_model.objects.create_user(username="other_reader", email="r@corp.example")
    django_user_model.objects.create_user(username="not_a_reader", email="n@corp.example")
    key = sharing.share_link_create(thread=thread, by=owner)
    for reader in ("hidden_handle_42", "other_reader"):
        sharing.share_link_open(user=django_user_model.objects.get(username=reader), key=key)
    client.force_login(owner)

    the_reader = _share(client, thread, "ceo@corp.example").content.decode()
    sharing.thread_member_remove(thread=thread, member_id=ThreadMember.objects.get(thread=thread, user=colleague).pk, by=owner)
    sharing.share_link_open(user=colleague, key=key)
    someone_else = _share(client, thread, "n@corp.example").content.decode()

    # Both answers and lists are alike but for the email typed: the link's lines stay as they were.
    assert _without_tokens(the_reader).replace("ceo@corp.example", "EMAIL") == _without_tokens(someone_else).replace(
        "n@corp.example", "EMAIL"
    )
    assert _listed(the_reader) == ["ceo@corp.example", "hidden_handle_42", "other_reader"]
    # Revoking the link takes what the link gave: the person the owner named keeps the thread.
    sharing.share_link_revoke(thread=thread, by=owner)
    assert _listed(_dialog_of(client, thread)) == ["n@corp.example"]
    assert access_to(user=colleague, thread=thread) is None
    assert _members(thread) == [("not_a_reader", "viewer", False)]


@pytest.mark.django_db
def test_a_person_added_by_email_who_then_opens_the_link_gets_a_line_of_the_links_as_anyone(client, thread, owner, people):
    client.force_login(owner)
    _share(client, thread, "vi@example.com", role="editor")
    key = sharing.share_link_create(thread=thread, by=owner)
    sharing.share_link_open(user=people["vi"], key=key)
    sharing.share_link_open(user=people["li"], key=key)

    assert _listed(_dialog_of(client, thread)) == ["vi@example.com", "li", "vi"]
    assert access_to(user=people["vi"], thread=thread) is Access.EDIT
    sharing.share_link_revoke(thread=thread, by=owner)
    assert _listed(_dialog_of(client, thread)) == ["vi@example.com"]
    assert _members(thread) == [("vi", "editor", False)]


@pytest.mark.django_db
def test_an_owner_sharing_each_new_thread_with_the_same_colleagues_by_email_is_never_refused(
    client, owner, django_user_model, settings
):
    """Sharing each day's threads with a team of four by email was refused
    from the 8th thread on (30 lookups a day), though those emails told the
    owner nothing new; a repeat add is not counted either."""
    settings.HAICO_RATE_SHARE_LOOKUPS = "30/day"
    team = [django_user_model.objects.create_user(username=f"mate{i}", email=f"mate{i}@corp.example") for i in range(4)]
    client.force_login(owner)
    refused = []
    for n in range(9):
        thread = conversation_services.thread_create(owner=owner, title=f"Daily {n}")
        for mate in team:
            if "can now view" not in _share(client, thread, mate.email).content.decode():
                refused.append((n, mate.email))
            if "already" not in _share(client, thread, mate.email.upper()).content.decode():
                refused.append((n, "repeat"))
    assert refused == []
    # A new email is still counted: the limit is there for what tells something new.
    settings.HAICO_RATE_SHARE_LOOKUPS = "4/day"
    answers = [_share(client, thread, f"new{i}@corp.example").content.decode() for i in range(5)]
    assert "You have looked up many people by email lately" in answers[-1]


@pytest.mark.django_db(transaction=True)
def test_the_names_a_person_is_on_a_thread_under_are_carried_to_a_branch(client, thread, owner, django_user_model):
    mate = django_user_model.objects.create_user(username="mate", email="mate@corp.example")
    client.force_login(owner)
    _share(client, thread, "mate@corp.example", role="editor")
    turn, _ = slot.turn_begin(thread=thread, user_message="First")
    slot.turn_finish(thread=thread, turn_index=turn)
    branch = fork_thread(source=thread, turn_index=turn, user=mate)

    assert _listed(_dialog_of(client, branch)) == ["mate@corp.example"]
    sharing.thread_member_remove(thread=thread, member_id=ThreadMember.objects.get(thread=thread, user=mate).pk, by=owner)
    assert "mate can now view" in _share(client, thread, "mate").content.decode()
    assert _listed(_dialog_of(client, branch)) == ["mate"]


@pytest.mark.django_db
@pytest.mark.parametrize("action, data", [("remove", {}), ("role", {"role": "editor"})])
def test_a_dialog_opened_before_the_names_changes_no_one_by_a_members_id(client, thread, owner, django_user_model, action, data):
    """A Share dialog rendered before its lines became names posted a member's
    id to /share/<id>/remove/; read as a name's id (numbered apart), the
    owner's Remove on alice's line removed bob, answered "Removed bob"."""
    alice = django_user_model.objects.create_user(username="alice")
    bob = django_user_model.objects.create_user(username="bob")
    client.force_login(owner)
    _share(client, thread, "alice")
    _share(client, thread, "bob")
    alices_member_id = ThreadMember.objects.get(thread=thread, user=alice).pk
    alices_name = ThreadMember.objects.get(thread=thread, user=alice).names.get()
    bobs_name = ThreadMember.objects.get(thread=thread, user=bob).names.get()
    # Make the ids collide as after the migration that numbered names apart.
    alices_name.delete()
    alices_name.pk = 1000
    alices_name.save(force_insert=True)
    bobs_name.delete()
    bobs_name.pk = alices_member_id
    bobs_name.save(force_insert=True)

    answer = client.post(f"/threads/{thread.pk}/share/{alices_member_id}/{action}/", data, **HTMX).content.decode()

    assert sharing.DIALOG_FROM_BEFORE in answer
    assert _listed(answer) == ["alice", "bob"]
    assert _members(thread) == [("alice", "viewer", False), ("bob", "viewer", False)]
    # A plain form (no JavaScript) is told the same, with nothing changed.
    plain = client.post(f"/threads/{thread.pk}/share/{alices_member_id}/{action}/", data)
    assert plain.status_code == 409 and _members(thread) == [("alice", "viewer", False), ("bob", "viewer", False)]
