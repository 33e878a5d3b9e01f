"""Sharing a thread: the people on it and their roles, and its read-only
link (docs/adr/0084). A thread is shared with its family: the branches
linked to it, all its owner's. Its trajectory map and turn versions show
and link them all, so the people on one are on all, with one role; each
change here applies to the whole family. Every write here is the owner's (or staff's, from the
admin, which is recorded in the moderation log) and takes effect at once:
after commit the thread's sockets are told (`thread.access`, through the
channel layer, so every server process hears it), and each socket whose
person lost the thread closes; their next request gets the not-found page
because every lookup asks `workspace.selectors.access_to` afresh.
"""

import logging
import secrets

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q

from workspace.errors import InvalidInput
from workspace.models import Thread, ThreadMember, ThreadMemberName

from . import outages, ratelimit
from .approval import is_waiting
from .live import group_name
from .models import Account, ModerationAction, Turn
from .selectors import family_ids, family_ids_a_removal_reaches
from .services import moderation_record
from .turns.approval_claims import turns_end_awaiting_of
from .turns.slot import turn_request_cancel

logger = logging.getLogger("haico.conversations.sharing")

ACCESS_EVENT = "thread.access"  # conversations.consumers.ThreadConsumer.thread_access
NO_SUCH_MEMBER = "That person is not on this thread any more; reload the dialog."
DIALOG_FROM_BEFORE = "This dialog was opened before an update and nothing was changed; here is the list as it is now."


def lock_family(owner_id) -> None:
    """Make the caller's transaction the only one changing the people of
    the owner's threads, or copying them to a new branch, until it ends.
    Without it a person removed at the moment an editor branches stayed on
    the branch: the removal did not see the branch yet, and the branch had
    copied them before it (docs/adr/0120). The owner's row is the lock every
    such write takes first, before any thread or member row, so no two of
    them wait for each other in opposite orders."""
    list(get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk", flat=True))


def members_copy(*, source: Thread, to: Thread) -> None:
    """`to` joins `source`'s family (a branch made of it, an archive imported
    as one): the same people with the same roles, the link's viewers too,
    under the same names. The caller holds `lock_family`."""
    members = list(ThreadMember.objects.filter(thread=source).prefetch_related("names"))
    copies = ThreadMember.objects.bulk_create(
        ThreadMember(thread=to, user_id=m.user_id, role=m.role, via_link=m.via_link, added_by_id=m.added_by_id) for m in members
    )
    ThreadMemberName.objects.bulk_create(
        ThreadMemberName(member=copy, name=n.name, role=n.role, by_link=n.by_link)
        for m, copy in zip(members, copies, strict=True)
        for n in m.names.all()
    )


def _family(thread: Thread, *, giving: bool = False) -> list:
    """The ids of `thread` and the branches linked to it (the owner's only),
    those still being made included, with the family locked (`lock_family`).

    `giving`: for a share that gives access, the family as the owner is
    shown it, which a deleted thread and a link to threads with other people
    end: sharing a branch left on its own by a deleted parent does not share
    the thread it came from. Taking access away reaches that family and the
    deleted threads linked to it, so a restore gives back nothing taken
    away, but not a family apart whose people the owner set on their own
    (`family_ids_a_removal_reaches`, docs/adr/0084)."""
    lock_family(thread.owner_id)
    if giving:
        family = family_ids(thread_id=thread.pk, pending=True, through_deleted=False)
    else:
        family = family_ids_a_removal_reaches(thread_id=thread.pk)
    return sorted(family | {thread.pk}, key=str)


def _tell_sockets(thread_ids, user_id=None) -> None:
    """After commit: the threads' sockets (only `user_id`'s, when given) check their access again."""

    def send():
        layer = get_channel_layer()
        for thread_id in thread_ids:
            group = group_name(thread_id)
            try:
                async_to_sync(layer.group_send)(group, {"type": ACCESS_EVENT, "group": group, "user_id": user_id})
            except Exception as error:
                # The change is stored: the sockets then lose the thread at their next message.
                outages.note(logger, error, "could not tell the sockets of thread %s that access changed", thread_id)

    transaction.on_commit(send)


def _stop_their_turns(thread_ids, user_id) -> None:
    """After commit: a turn the person started in the family and is still
    running stops (wherever it runs: its server sees the request within a
    second), so someone who lost editing goes on writing nothing through
    the agent. A turn waiting for approval stays in the chat, and is
    stopped by whatever answer it gets (conversations.turns.registry)."""

    def stop():
        running = Turn.objects.filter(thread_id__in=thread_ids, person_id=user_id, status=Turn.Status.RUNNING)
        _cancel_turns_in(running.values("thread_id"), user_id)

    transaction.on_commit(stop)


def stop_turns_of_ended_account(user_id) -> None:
    """The running turns of an account being deleted or deactivated stop
    after the commit, wherever they run: the agent writes nothing more in
    the name of someone who can no longer sign in (a deleted account's
    writes would name a row that is gone, and fail). Its turns waiting for
    an approval end now, stopped, their change not made (docs/adr/0129):
    first, so one answered at the same moment is among the running ones."""
    turns_end_awaiting_of(user_id)
    # Read now: a deleted account's turns no longer name it after the commit.
    running_in = list(Turn.objects.filter(person_id=user_id, status=Turn.Status.RUNNING).values_list("thread_id", flat=True))
    if running_in:
        transaction.on_commit(lambda: _cancel_turns_in(running_in, user_id))


def _cancel_turns_in(thread_ids, user_id) -> None:
    for thread in Thread.objects.filter(pk__in=thread_ids):
        try:
            turn_request_cancel(thread=thread)
        except Exception as error:
            outages.note(logger, error, "could not stop the turn %s's person lost editing in thread %s", user_id, thread.pk)


def _record_if_staff(*, thread: Thread, by: AbstractBaseUser, detail: str) -> None:
    if by.pk != thread.owner_id:
        moderation_record(thread=thread, staff_user=by, action=ModerationAction.Action.SHARE, detail=detail)


SHARE_LOOKUPS = "share-lookups"


def _may_sign_in(accounts):
    """The accounts that can sign in and use HAICO: active, and not waiting
    for approval (staff never wait, conversations.approval.is_waiting)."""
    waiting = Account.objects.filter(waiting_for_approval=True, user__is_staff=False).values("user_id")
    return accounts.filter(is_active=True).exclude(pk__in=waiting)


STAFF_ARE_NOT_MEMBERS = (
    "Staff are not members of the threads they moderate: they read them through the admin's review and "
    "read-only view, each read recorded. Only the owner can share a thread with a staff account."
)


def _refuse_staff_giving_staff(*, thread: Thread, person: AbstractBaseUser, by: AbstractBaseUser) -> None:
    """Staff changing a thread's people from the admin give no staff account
    (theirs or a colleague's) access to it: staff are not members
    (docs/adr/0084), and a member's reads are nowhere on record. The owner
    may share with a staff account as with anyone: a colleague who is also
    staff."""
    if by.pk != thread.owner_id and person.is_staff:
        raise InvalidInput(STAFF_ARE_NOT_MEMBERS)


def _named_before(who: str, asker: AbstractBaseUser) -> bool:
    """`asker` has shared one of their threads under this very name: looking
    it up again (the next day's thread for the same colleagues, a repeat
    add) tells them nothing new, so it is not counted (docs/adr/0137)."""
    return ThreadMemberName.objects.filter(member__thread__owner=asker, name__iexact=who, by_link=False).exists()


def person_named(who: str, *, asker: AbstractBaseUser | None = None) -> AbstractBaseUser:
    """The account a "Username or email" field names; InvalidInput when
    there is none that can sign in.

    The answer tells a stranger nothing an owner does not need
    (docs/adr/0137): an account that is inactive or waits for approval is
    answered exactly as no account, and nothing here names the account
    found. `asker` (the owner at the Share dialog) may look up only so many
    names that are not an exact username in a while
    (HAICO_RATE_SHARE_LOOKUPS), so emails cannot be matched to accounts at
    scale; an exact username is never counted."""
    who = (who or "").strip()
    if not who:
        raise InvalidInput("Enter the username or email of the person to add.")
    accounts = _may_sign_in(get_user_model().objects)
    exact = list(accounts.filter(username=who)[:1])
    if exact:
        return exact[0]
    if asker is not None and not _named_before(who, asker):
        rate = ratelimit.rate_setting("HAICO_RATE_SHARE_LOOKUPS")
        wait = ratelimit.hit(SHARE_LOOKUPS, str(asker.pk), rate)
        if wait is not None:
            raise InvalidInput(
                f"You have looked up many people by email lately; try again in {ratelimit.duration_text(wait)}, "
                "or enter their exact username."
            )
    matches = list(accounts.filter(Q(username__iexact=who) | Q(email__iexact=who))[:2])
    if not matches:
        raise InvalidInput(f"No one here has the username or email “{who}”.")
    if len(matches) > 1:
        raise InvalidInput(f"More than one account matches “{who}”; enter the exact username.")
    return matches[0]


def _settle(thread_ids, user_id) -> bool:
    """Each of the person's rows in `thread_ids` takes the highest role of
    their names there (`via_link` when all are the link's); a row left with
    no name is deleted. True when they lost a thread or editing somewhere,
    so their running turns stop."""
    lost = False
    for member in ThreadMember.objects.filter(thread_id__in=thread_ids, user_id=user_id).prefetch_related("names"):
        names = list(member.names.all())
        if not names:
            member.delete()
            lost = True
            continue
        editor = any(n.role == ThreadMember.Role.EDITOR for n in names)
        role = ThreadMember.Role.EDITOR if editor else ThreadMember.Role.VIEWER
        via_link = all(n.by_link for n in names)
        if (member.role, member.via_link) != (role, via_link):
            lost = lost or (member.role == ThreadMember.Role.EDITOR and role == ThreadMember.Role.VIEWER)
            ThreadMember.objects.filter(pk=member.pk).update(role=role, via_link=via_link)
    return lost


def _changed(thread_ids, user_id) -> None:
    """After a change of the person's names in `thread_ids`: their rows
    settled, their turns stopped if they lost anything, their sockets told."""
    if _settle(thread_ids, user_id):
        _stop_their_turns(thread_ids, user_id)
    _tell_sockets(thread_ids, user_id)


@transaction.atomic
def thread_member_add(*, thread: Thread, who: str, role: str, by: AbstractBaseUser) -> ThreadMember:
    """Share `thread` with the person `who` names, as `role` (viewer or
    editor), under that name: the dialog lists it as typed, beside any
    other name the person is on the thread under (docs/adr/0137). Typing
    the username a link viewer is listed by makes them a member in their
    own right."""
    if role not in ThreadMember.Role.values:
        raise InvalidInput("Choose Viewer or Editor.")
    person = person_named(who, asker=by if by.pk == thread.owner_id else None)
    if person.pk == thread.owner_id:
        raise InvalidInput("That is the thread's owner; the owner always has the thread.")
    _refuse_staff_giving_staff(thread=thread, person=person, by=by)
    name = who.strip()
    lock_family(thread.owner_id)  # before any member row: every writer locks in that order
    given = (
        ThreadMemberName.objects.select_for_update()
        .filter(member__thread=thread, member__user=person, name__iexact=name, by_link=False)
        .first()
    )
    if given is not None:
        # The very name the owner gave before, listed as they typed it: nothing new is told.
        raise InvalidInput(f"{given.name} is on this thread already, as {given.get_role_display().lower()}.")
    family = _family(thread, giving=True)
    for thread_id in family:
        member, _ = ThreadMember.objects.get_or_create(
            thread_id=thread_id, user=person, defaults={"role": role, "via_link": False, "added_by": by}
        )
        ThreadMemberName.objects.filter(member=member, name=name, by_link=True).delete()
        ThreadMemberName.objects.update_or_create(member=member, name=name, by_link=False, defaults={"role": role})
    _changed(family, person.pk)
    _record_if_staff(
        thread=thread, by=by, detail=f"Shared with {person.get_username()} as {dict(ThreadMember.Role.choices)[role]}"
    )
    return ThreadMember.objects.get(thread=thread, user=person)


def _member(thread: Thread, member_id) -> ThreadMember:
    lock_family(thread.owner_id)  # before the member row: every writer locks in that order
    member = ThreadMember.objects.select_for_update().filter(thread=thread, pk=member_id).select_related("user").first()
    if member is None:
        raise InvalidInput(NO_SUCH_MEMBER)
    return member


def _name(thread: Thread, name_id) -> ThreadMemberName:
    lock_family(thread.owner_id)  # before the member row: every writer locks in that order
    name = ThreadMemberName.objects.filter(member__thread=thread, pk=name_id).select_related("member").first()
    if name is None:
        raise InvalidInput(NO_SUCH_MEMBER)
    ThreadMember.objects.select_for_update().filter(pk=name.member_id).first()
    return name


@transaction.atomic
def thread_member_set_role(
    *, thread: Thread, member_id, role: str, by: AbstractBaseUser, shown: str | None = None
) -> ThreadMember:
    """The person's role, under every name they are on the thread by (staff's
    admin row is the person, not a name).

    `shown`: the role the page the change comes from showed (staff's
    admin page, docs/adr/0129). A row posted as it was shown is no change
    of theirs, whatever it holds now: a role the owner set meanwhile stays.
    One they did change is what they chose; if the owner chose the same
    meanwhile, nothing more is done (with two roles, a row changed since
    holds either what was shown or what was chosen)."""
    if role not in ThreadMember.Role.values:
        raise InvalidInput("Choose Viewer or Editor.")
    member = _member(thread, member_id)
    if shown is not None and role == shown:
        return member
    if role == ThreadMember.Role.EDITOR and (member.role != role or member.via_link):
        _refuse_staff_giving_staff(thread=thread, person=member.user, by=by)
    if member.role != role or member.via_link:
        # Made an editor: only where a share gives access now; made a viewer: everywhere.
        family = _family(thread, giving=role == ThreadMember.Role.EDITOR)
        ThreadMemberName.objects.filter(member__thread_id__in=family, member__user_id=member.user_id).update(
            role=role, by_link=False
        )
        ThreadMember.objects.filter(thread_id__in=family, user_id=member.user_id).update(role=role, via_link=False)
        if role == ThreadMember.Role.VIEWER:
            _stop_their_turns(family, member.user_id)
        _tell_sockets(family, member.user_id)
        member.refresh_from_db()
        _record_if_staff(thread=thread, by=by, detail=f"{member.user.get_username()} made {member.get_role_display()}")
    return member


@transaction.atomic
def thread_member_name_set_role(*, thread: Thread, name_id, role: str, by: AbstractBaseUser) -> ThreadMemberName:
    """The owner's dialog: the role of one name the thread is shared under
    (a link viewer's line given a role becomes an ordinary member's). The
    person has the highest role of their names; made a viewer under the
    last name that made them an editor, they are a viewer everywhere a
    removal reaches (docs/adr/0084)."""
    if role not in ThreadMember.Role.values:
        raise InvalidInput("Choose Viewer or Editor.")
    entry = _name(thread, name_id)
    if entry.role == role and not entry.by_link:
        return entry
    user_id = entry.member.user_id
    if role == ThreadMember.Role.EDITOR:
        _refuse_staff_giving_staff(thread=thread, person=entry.member.user, by=by)
    family = _family(thread, giving=role == ThreadMember.Role.EDITOR)
    same = ThreadMemberName.objects.filter(member__thread_id__in=family, member__user_id=user_id, name=entry.name)
    same.filter(by_link=entry.by_link).update(role=role, by_link=False)
    if (
        role == ThreadMember.Role.VIEWER
        and not ThreadMemberName.objects.filter(
            member__thread=thread, member__user_id=user_id, role=ThreadMember.Role.EDITOR
        ).exists()
    ):
        # No longer an editor of this thread under any name: nor of the deleted threads linked.
        ThreadMemberName.objects.filter(member__thread_id__in=family, member__user_id=user_id).update(
            role=ThreadMember.Role.VIEWER
        )
    _changed(family, user_id)
    entry.refresh_from_db()
    _record_if_staff(thread=thread, by=by, detail=f"{entry.member.user.get_username()} made {entry.get_role_display()}")
    return entry


@transaction.atomic
def thread_member_remove(*, thread: Thread, member_id, by: AbstractBaseUser) -> None:
    """The person off the thread, under every name (staff's admin row)."""
    member = _member(thread, member_id)
    family = _family(thread)
    ThreadMember.objects.filter(thread_id__in=family, user_id=member.user_id).delete()
    _stop_their_turns(family, member.user_id)
    _record_if_staff(thread=thread, by=by, detail=f"Removed {member.user.get_username()}")
    _tell_sockets(family, member.user_id)


@transaction.atomic
def thread_member_name_remove(*, thread: Thread, name_id, by: AbstractBaseUser) -> None:
    """The owner's dialog: one name the thread is shared under taken off.
    A person still on the thread under another name keeps it (the owner
    named them so too); the last name gone, the person is off the thread
    everywhere a removal reaches (docs/adr/0084)."""
    entry = _name(thread, name_id)
    user_id = entry.member.user_id
    family = _family(thread)
    ThreadMemberName.objects.filter(
        member__thread_id__in=family, member__user_id=user_id, name=entry.name, by_link=entry.by_link
    ).delete()
    if not ThreadMemberName.objects.filter(member__thread=thread, member__user_id=user_id).exists():
        ThreadMember.objects.filter(thread_id__in=family, user_id=user_id).delete()
        _stop_their_turns(family, user_id)
        _tell_sockets(family, user_id)
    else:
        _changed(family, user_id)
    _record_if_staff(thread=thread, by=by, detail=f"Removed {entry.member.user.get_username()} as {entry.name}")


@transaction.atomic
def share_link_create(*, thread: Thread, by: AbstractBaseUser) -> str:
    """A new read-only link for the thread (replacing any it had: the old
    one stops working); its secret."""
    had_link = bool(thread.share_link_key)
    thread.share_link_key = secrets.token_urlsafe(24)
    thread.save(update_fields=["share_link_key"])
    if had_link:
        _forget_link_viewers(thread)
    _record_if_staff(thread=thread, by=by, detail="Made the read-only link")
    return thread.share_link_key


@transaction.atomic
def share_link_revoke(*, thread: Thread, by: AbstractBaseUser) -> None:
    """The link stops working, and everyone who came in by it loses the thread."""
    thread.share_link_key = ""
    thread.save(update_fields=["share_link_key"])
    _forget_link_viewers(thread)
    _record_if_staff(thread=thread, by=by, detail="Revoked the read-only link")


def _forget_link_viewers(thread: Thread) -> None:
    """Every name the link gave goes; a person left with none loses the thread."""
    family = _family(thread)
    by_link = ThreadMemberName.objects.filter(member__thread_id__in=family, by_link=True)
    people = set(by_link.values_list("member__user_id", flat=True))
    if by_link.delete()[0]:
        for user_id in people:
            _settle(family, user_id)
        _tell_sockets(family)


@transaction.atomic
def share_link_open(*, user: AbstractBaseUser, key: str) -> Thread | None:
    """The thread whose live link `key` is, with `user` made its viewer
    (unless they have it already); None for a link that does not (or no
    longer) work."""
    if not key or is_waiting(user):
        return None
    thread = Thread.objects.filter(share_link_key=key, is_deleted=False).first()
    if thread is None:
        return None
    if thread.owner_id != user.pk:
        # Listed by the username they came as, beside any name the owner gave them: a
        # person the owner added by email gets a line of the link's like anyone (docs/adr/0137).
        username = user.get_username()
        for thread_id in _family(thread, giving=True):
            member, _ = ThreadMember.objects.get_or_create(
                thread_id=thread_id, user=user, defaults={"role": ThreadMember.Role.VIEWER, "via_link": True}
            )
            if not member.names.filter(name=username, by_link=False).exists():
                ThreadMemberName.objects.get_or_create(
                    member=member, name=username, by_link=True, defaults={"role": ThreadMember.Role.VIEWER}
                )
    return thread
