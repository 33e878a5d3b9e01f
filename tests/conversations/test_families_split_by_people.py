"""A family whose parts have different people (docs/adr/0084): a branch cut
from its family by a deleted parent and shared alone, then the parent
restored by staff; a deleted branch restored after its family was shared.
Nothing anyone did is lost (every thread is back in its owner's lists and
map), and no one sees what is not theirs: the map, the turn versions and
the live pushes of a thread show only threads with its people. Personas:
the owner, a viewer "vi" of one branch, an editor "ed", staff."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.urls import reverse

from conversations import sharing
from tests.support.web import HTMX
from workspace.models import Thread, ThreadMember
from workspace.selectors import access_to


@pytest.fixture
def people(django_user_model):
    return {
        name: django_user_model.objects.create_user(username=name, email=f"{name}@example.com", password="pw-123456")
        for name in ("ed", "vi")
    }


def _ended_turns(thread, count, message):
    from conversations.turns import slot

    for n in range(count):
        turn, _ = slot.turn_begin(thread=thread, user_message=f"{message} {n}")
        slot.turn_finish(thread=thread, turn_index=turn)


def _family_split_then_restored(owner, staff, *, restore=True):
    """Root → Middle → Child, Root → Sibling; the owner deletes Middle and
    shares Child alone with vi (it is a family of its own then); staff
    restore Middle."""
    from conversations.branching import fork_thread
    from conversations.services import thread_create, thread_rename, thread_restore, thread_soft_delete

    root = thread_create(owner=owner, title="Root secret salary plan")
    _ended_turns(root, 3, "Root private message")
    middle = fork_thread(source=root, turn_index=2, user=owner)
    thread_rename(thread=middle, title="Middle secret draft")
    _ended_turns(middle, 1, "Middle private message")
    child = fork_thread(source=middle, turn_index=3, user=owner)
    thread_rename(thread=child, title="Child shared one")
    sibling = fork_thread(source=root, turn_index=1, user=owner)
    thread_rename(thread=sibling, title="Sibling secret letter")
    _ended_turns(sibling, 1, "Sibling private message")
    thread_soft_delete(thread=middle)
    sharing.thread_member_add(thread=child, who="vi", role="viewer", by=owner)
    if restore:
        thread_restore(thread=middle, staff_user=staff)
    return root, middle, child, sibling


def _page(client, user, thread) -> str:
    client.force_login(user)
    response = client.get(f"/threads/{thread.pk}/workspace/")
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_after_staff_restore_a_parent_the_branch_viewers_page_shows_nothing_of_the_rest_of_the_family(
    client, owner, people, staff
):
    root, middle, child, sibling = _family_split_then_restored(owner, staff)

    assert [access_to(user=people["vi"], thread=t) is not None for t in (root, middle, child, sibling)] == [
        False,
        False,
        True,
        False,
    ]
    page = _page(client, people["vi"], child)
    # Its own history (turns 1-3, run in Root and Middle) it shows; nothing else.
    assert "Child shared one" in page and "Middle private message 0" in page
    shown = [
        text
        for text in ("Root secret", "Middle secret", "Sibling secret", "Sibling private", "Root private message 2")
        if text in page
    ]
    assert shown == []
    assert [t for t in (root, middle, sibling) if str(t.pk) in page] == []


@pytest.mark.django_db(transaction=True)
def test_staff_restore_loses_nothing_the_owner_sees_the_restored_thread_with_its_family_and_the_branch_apart(
    client, owner, people, staff
):
    root, middle, child, sibling = _family_split_then_restored(owner, staff)

    assert not Thread.objects.get(pk=middle.pk).is_deleted
    on_root = _page(client, owner, root)
    assert str(middle.pk) in on_root and str(sibling.pk) in on_root
    assert str(child.pk) not in on_root
    # Child stands on its own, its turns from before the branch point drawn as its own.
    on_child = _page(client, owner, child)
    assert "Root private message 0" in on_child and "Middle private message 0" in on_child
    assert str(middle.pk) not in on_child and str(sibling.pk) not in on_child
    listing = client.get("/threads/").content.decode()
    for title in ("Root secret", "Middle secret", "Child shared one", "Sibling secret"):
        assert title in listing


@pytest.mark.django_db(transaction=True)
def test_after_staff_restore_a_parent_every_family_shown_has_one_set_of_people(owner, people, staff):
    from conversations.selectors import family_ids

    root, middle, child, sibling = _family_split_then_restored(owner, staff)

    assert family_ids(thread_id=child.pk, through_deleted=False) == {child.pk}
    assert family_ids(thread_id=middle.pk, through_deleted=False) == {root.pk, middle.pk, sibling.pk}
    for thread in (root, middle, child, sibling):
        family = family_ids(thread_id=thread.pk, through_deleted=False)
        people_sets = {
            tuple(sorted(ThreadMember.objects.filter(thread_id=t).values_list("user__username", flat=True))) for t in family
        }
        assert len(people_sets) == 1, (thread.title, people_sets)


@pytest.mark.django_db(transaction=True)
def test_after_staff_restore_a_parent_the_branch_viewers_turn_arrows_lead_only_to_threads_they_may_open(owner, people, staff):
    from conversations.selectors import turn_versions_for

    root, middle, child, sibling = _family_split_then_restored(owner, staff)
    child.refresh_from_db()

    assert turn_versions_for(thread=child) == {}
    # The owner's arrows between Root's, Middle's and Sibling's turn 2 stay.
    middle.refresh_from_db()
    assert turn_versions_for(thread=middle)[3].count == 2


@pytest.mark.django_db(transaction=True)
def test_sharing_a_branch_apart_after_the_restore_shares_only_its_part(owner, people, staff):
    """Adding ed to Child gives ed Child only; adding vi to Root as a viewer
    gives both parts the same people, so they are one family again, with
    nothing there vi may not open."""
    from conversations.selectors import family_ids

    root, middle, child, sibling = _family_split_then_restored(owner, staff)
    sharing.thread_member_add(thread=child, who="ed", role="editor", by=owner)
    assert [access_to(user=people["ed"], thread=t) is not None for t in (root, middle, child, sibling)] == [
        False,
        False,
        True,
        False,
    ]

    sharing.thread_member_add(thread=root, who="ed", role="editor", by=owner)
    sharing.thread_member_add(thread=root, who="vi", role="viewer", by=owner)
    assert family_ids(thread_id=child.pk, through_deleted=False) == {root.pk, middle.pk, child.pk, sibling.pk}
    assert all(access_to(user=people["vi"], thread=t) is not None for t in (root, middle, child, sibling))


def _ed_on_both_parts(owner, staff):
    """The split family, then the owner shares Child and Root with ed, each
    in its own dialog (each part's map shows only itself)."""
    root, middle, child, sibling = _family_split_then_restored(owner, staff)
    sharing.thread_member_add(thread=child, who="ed", role="editor", by=owner)
    sharing.thread_member_add(thread=root, who="ed", role="editor", by=owner)
    return root, middle, child, sibling


def _roles(user, threads):
    return [(access_to(user=user, thread=t).name if access_to(user=user, thread=t) else None) for t in threads]


@pytest.mark.django_db(transaction=True)
def test_removing_a_person_from_one_part_of_a_split_family_leaves_them_on_the_part_the_owner_shared_apart(
    client, owner, people, staff
):
    """Removing ed from Root (whose map and dialog never show Child) took ed
    off Child too, which the owner had shared with ed in Child's own dialog."""
    root, middle, child, sibling = _ed_on_both_parts(owner, staff)
    on_root = ThreadMember.objects.get(thread=root, user=people["ed"])

    sharing.thread_member_remove(thread=root, member_id=on_root.pk, by=owner)

    assert _roles(people["ed"], (root, middle, child, sibling)) == [None, None, "EDIT", None]
    client.force_login(owner)
    dialog = client.get(reverse("conversations:share", kwargs={"thread_id": child.pk}), **HTMX).content.decode()
    assert ">ed</span>" in dialog and ">vi</span>" in dialog


@pytest.mark.django_db(transaction=True)
def test_making_a_person_a_viewer_of_one_part_of_a_split_family_leaves_their_editing_and_their_turn_in_the_other(
    owner, people, staff
):
    """Made a viewer of Root, ed lost editing of Child too, and the turn ed
    was running there was stopped."""
    from conversations.models import Turn
    from conversations.turns import slot

    root, middle, child, sibling = _ed_on_both_parts(owner, staff)
    child.refresh_from_db()
    turn, _ = slot.turn_begin(thread=child, user_message="Ed's question", person=people["ed"])
    on_root = ThreadMember.objects.get(thread=root, user=people["ed"])

    sharing.thread_member_set_role(thread=root, member_id=on_root.pk, role="viewer", by=owner)

    assert _roles(people["ed"], (root, middle, child, sibling)) == ["VIEW", "VIEW", "EDIT", "VIEW"]
    assert Turn.objects.get(thread=child, index=turn).status == Turn.Status.RUNNING


@pytest.mark.django_db(transaction=True)
def test_a_removal_reaches_the_deleted_threads_linked_to_the_family_so_a_restore_gives_nothing_back(owner, people, staff):
    """Root → Middle → Child, shared with ed; Middle deleted, then Child
    shared apart with vi. Removing ed from Root takes ed off Middle (deleted,
    linked to Root), not off Child (a family of its own, whose dialog lists
    ed). Staff restore Middle: ed gets nothing back, and nobody is shown a
    thread they cannot open."""
    from conversations.branching import fork_thread
    from conversations.selectors import family_ids
    from conversations.services import thread_create, thread_restore, thread_soft_delete

    root = thread_create(owner=owner, title="Root")
    _ended_turns(root, 2, "Root message")
    sharing.thread_member_add(thread=root, who="ed", role="editor", by=owner)
    middle = fork_thread(source=root, turn_index=1, user=owner)
    _ended_turns(middle, 1, "Middle message")
    child = fork_thread(source=middle, turn_index=2, user=owner)
    thread_soft_delete(thread=middle)
    sharing.thread_member_add(thread=child, who="vi", role="viewer", by=owner)
    on_root = ThreadMember.objects.get(thread=root, user=people["ed"])

    sharing.thread_member_remove(thread=root, member_id=on_root.pk, by=owner)

    assert not ThreadMember.objects.filter(thread__in=(root, middle), user=people["ed"]).exists()
    assert _roles(people["ed"], (root, child)) == [None, "EDIT"]
    thread_restore(thread=middle, staff_user=staff)
    assert _roles(people["ed"], (root, middle, child)) == [None, None, "EDIT"]
    assert _roles(people["vi"], (root, middle, child)) == [None, None, "VIEW"]
    # Every family shown has one set of people: Middle is back in Root's, Child stays apart.
    assert family_ids(thread_id=middle.pk, through_deleted=False) == {root.pk, middle.pk}
    assert family_ids(thread_id=child.pk, through_deleted=False) == {child.pk}


@pytest.mark.django_db(transaction=True)
def test_a_removal_from_a_part_reaches_a_deleted_thread_beyond_a_deleted_one(owner, people, staff):
    """Root → Middle → Leaf, all shared with ed, Leaf then Middle deleted:
    removing ed from Root takes ed off both, so restoring either, or both,
    gives ed nothing."""
    from conversations.branching import fork_thread
    from conversations.services import thread_create, thread_restore, thread_soft_delete

    root = thread_create(owner=owner, title="Root")
    _ended_turns(root, 2, "Root message")
    sharing.thread_member_add(thread=root, who="ed", role="viewer", by=owner)
    middle = fork_thread(source=root, turn_index=1, user=owner)
    _ended_turns(middle, 1, "Middle message")
    leaf = fork_thread(source=middle, turn_index=2, user=owner)
    thread_soft_delete(thread=leaf)
    thread_soft_delete(thread=middle)

    sharing.thread_member_remove(thread=root, member_id=ThreadMember.objects.get(thread=root, user=people["ed"]).pk, by=owner)

    assert not ThreadMember.objects.filter(user=people["ed"]).exists()
    thread_restore(thread=leaf, staff_user=staff)
    thread_restore(thread=middle, staff_user=staff)
    assert _roles(people["ed"], (root, middle, leaf)) == [None, None, None]


@pytest.mark.django_db(transaction=True)
def test_a_deleted_branch_restored_after_its_family_was_shared_stays_apart_from_it(client, owner, people, staff):
    """Staff undelete a branch the family's people never had: their map does
    not show it (they may not open it) and its owner finds it in their list."""
    from conversations.branching import fork_thread
    from conversations.services import thread_create, thread_rename, thread_restore, thread_soft_delete

    root = thread_create(owner=owner, title="Root shared later")
    _ended_turns(root, 2, "Root message")
    branch = fork_thread(source=root, turn_index=1, user=owner)
    thread_rename(thread=branch, title="Branch deleted early")
    _ended_turns(branch, 1, "Branch private message")
    thread_soft_delete(thread=branch)
    sharing.thread_member_add(thread=root, who="vi", role="viewer", by=owner)
    thread_restore(thread=branch, staff_user=staff)

    assert access_to(user=people["vi"], thread=branch) is None
    on_root = _page(client, people["vi"], root)
    assert "Branch deleted early" not in on_root and str(branch.pk) not in on_root
    assert "Branch deleted early" not in client.get("/threads/").content.decode()
    on_branch = _page(client, owner, branch)
    assert "Branch deleted early" in client.get("/threads/").content.decode()
    assert "Branch private message 0" in on_branch and "Root message 0" in on_branch


@pytest.mark.django_db(transaction=True)
def test_a_branch_link_between_threads_with_other_people_is_never_shown_whatever_joined_them(client, owner, people):
    """Defence in depth: a link stored between a shared thread and one of
    the owner's unshared threads draws neither on the other's map nor in
    its arrows, nor lets a person continue from the other's turns."""
    from conversations.models import BranchLink
    from conversations.selectors import turn_versions_for
    from conversations.services import thread_create
    from conversations.trajectory import continue_point, family_graph

    shared = thread_create(owner=owner, title="Shared with vi")
    _ended_turns(shared, 2, "Shared message")
    sharing.thread_member_add(thread=shared, who="vi", role="editor", by=owner)
    private = thread_create(owner=owner, title="Private of the owner")
    _ended_turns(private, 2, "Private message")
    BranchLink.objects.create(thread=private, parent=shared, branch_point_turn=1, status=BranchLink.Status.ACTIVE)
    shared.refresh_from_db()
    private.refresh_from_db()

    assert [t.pk for t in family_graph(thread=shared).threads] == [shared.pk]
    assert turn_versions_for(thread=shared) == {}
    page = _page(client, people["vi"], shared)
    assert "Private of the owner" not in page and str(private.pk) not in page and "Private message" not in page
    # The owner's map of the private thread draws its turns as its own, and they can be continued from.
    assert [t.pk for t in family_graph(thread=private).threads] == [private.pk]
    assert continue_point(user=owner, thread_id=private.pk, turn_index=1) == (private, 1)


@pytest.mark.django_db(transaction=True)
def test_staff_restoring_a_parent_in_the_admin_are_told_which_branch_stays_apart(staff_client, owner, people, staff):
    from django.urls import reverse

    root, middle, child, sibling = _family_split_then_restored(owner, staff, restore=False)

    response = staff_client.post(
        reverse("admin:workspace_thread_changelist"),
        {"action": "restore_selected", "_selected_action": [str(middle.pk)]},
        follow=True,
    )
    body = response.content.decode()
    assert "Restored 1 thread(s)" in body
    assert "“Middle secret draft” stays apart from “Child shared one”" in body
    assert "stays apart from “Root" not in body


async def _drain(socket, seconds) -> list[str]:
    """Every frame that arrives within `seconds`."""
    frames = []
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        if await socket.receive_nothing(timeout=0.1):
            continue
        output = await socket.receive_output(timeout=1)
        if output["type"] == "websocket.close":
            frames.append(f"CLOSED {output.get('code')}")
            break
        frames.append(output.get("text", ""))
    return frames


@pytest.mark.django_db(transaction=True)
async def test_after_staff_restore_a_parent_a_turn_in_a_thread_the_viewer_may_not_open_never_reaches_their_open_page(
    owner, people, staff, sockets, script
):
    from conversations.services import thread_restore
    from conversations.turns import registry
    from tests.support.fake_model import Reply

    root, middle, child, sibling = await sync_to_async(_family_split_then_restored)(owner, staff, restore=False)
    theirs = await sockets(child.pk, people["vi"])
    await _drain(theirs, 0.5)
    await sync_to_async(thread_restore)(thread=middle, staff_user=staff)

    script(Reply(text="Fine."))
    await registry.start_turn(thread=sibling, user_message="Sibling confidential pay figures", user=owner)
    await registry.wait_for_turn(sibling.pk)

    frames = await _drain(theirs, 2.0)
    assert not [f for f in frames if "Sibling confidential" in f or str(sibling.pk) in f or "Sibling secret" in f]
