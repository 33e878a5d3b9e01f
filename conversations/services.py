"""Writes for threads: creation, renaming, the chat's model choice,
soft-delete, feedback, staff moderation and the activity log. The turn slot is conversations.turns.slot."""

import functools
import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from agent import catalogue
from workspace import people
from workspace.errors import InvalidInput
from workspace.events import Change, announce
from workspace.models import Artifact, Thread
from workspace.text import clean_text, cut_to, encodable

from . import live
from .models import (
    FEEDBACK_COMMENT_MAX_CHARS,
    FEEDBACK_RATING_MAX,
    FEEDBACK_RATING_MIN,
    ActivityLogEntry,
    Feedback,
    LayoutPreference,
    ModerationAction,
    TurnSlot,
)

logger = logging.getLogger("haico.conversations.services")

THREAD_TITLE_MAX_CHARS = 200
DEFAULT_THREAD_TITLE = "New thread"


def clean_title(title) -> str:
    return clean_text(title, label="Title", max_chars=THREAD_TITLE_MAX_CHARS, collapse_whitespace=True)


def announce_thread(thread: Thread) -> None:
    """Title or deletion changed: every open tab of the thread hears of it."""
    announce(Change(thread_id=thread.pk, surface="thread"))


@transaction.atomic
def thread_create(*, owner: AbstractBaseUser, title: str = DEFAULT_THREAD_TITLE) -> Thread:
    return Thread.objects.create(owner=owner, title=clean_title(title))


@transaction.atomic
def thread_rename(*, thread: Thread, title: str) -> Thread:
    thread.title = clean_title(title)
    thread.save(update_fields=["title"])
    announce_thread(thread)
    return thread


@transaction.atomic
def thread_choose_model(*, thread: Thread, model: str, user: AbstractBaseUser) -> Thread:
    """Remember the model chosen in the thread's chat (its key,
    agent.catalogue); one `user` may not use is refused (it could never
    answer their turn). Every open tab's Model selector hears of it."""
    models = catalogue.choices_for(user)
    chosen = catalogue.find(models, model)
    if chosen is None:
        raise InvalidInput(catalogue.not_offered_message(user, model, models, then="Choose another model."))
    updated = Thread.objects.filter(pk=thread.pk).exclude(chat_model=chosen.key).update(chat_model=chosen.key)
    thread.chat_model = chosen.key
    if updated:
        announce(Change(thread_id=thread.pk, surface="model"))
    return thread


@transaction.atomic
def thread_soft_delete(*, thread: Thread, staff_user: AbstractBaseUser | None = None) -> Thread:
    """The thread leaves every list and page; a turn running in it stops
    after the commit (nobody sees it any more, and it would go on spending
    its person's tokens), keeping what it wrote and streamed."""
    thread.is_deleted = True
    thread.deleted_at = timezone.now()
    thread.save(update_fields=["is_deleted", "deleted_at"])
    if staff_user is not None:
        ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=ModerationAction.Action.SOFT_DELETE)
    announce_thread(thread)
    transaction.on_commit(functools.partial(_check_family_maps, thread.pk))
    if TurnSlot.objects.filter(thread_id=thread.pk, turn_index__isnull=False).exists():
        transaction.on_commit(functools.partial(_stop_running_turn, thread))
    return thread


def _check_family_maps(thread_id) -> None:
    """The open maps of the thread's family (its parent's, its branches')
    drop or regain its lane (docs/adr/0159)."""
    # The map's reads import the turn slot, whose writer imports this module.
    from .trajectory import publish_checks_of_families_around

    try:
        publish_checks_of_families_around(thread_id=thread_id)
    except Exception:
        # Done and stored; an open map catches up at its family's next turn end or reload.
        logger.exception("could not tell the open maps of %s's family", thread_id)


def _stop_running_turn(thread: Thread) -> None:
    # The slot's writer (turns.slot) imports this module, for a thread's title.
    from .turns.slot import turn_request_cancel

    turn_request_cancel(thread=thread)


@transaction.atomic
def thread_restore(*, thread: Thread, staff_user: AbstractBaseUser) -> Thread:
    thread.is_deleted = False
    thread.deleted_at = None
    thread.save(update_fields=["is_deleted", "deleted_at"])
    ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=ModerationAction.Action.RESTORE)
    announce_thread(thread)
    transaction.on_commit(functools.partial(_check_family_maps, thread.pk))
    return thread


@transaction.atomic
def thread_set_mode(*, thread: Thread, mode: str) -> Thread:
    """The agent's mode for the thread's next turns (docs/adr/0018); every
    open tab's Mode selector hears of it. A turn already running keeps the
    mode it started with."""
    if mode not in Thread.Mode.values:
        raise InvalidInput(f"Choose a mode: one of {', '.join(Thread.Mode.labels)}.")
    updated = Thread.objects.filter(pk=thread.pk).exclude(mode=mode).update(mode=mode)
    thread.mode = mode
    if updated:
        announce(Change(thread_id=thread.pk, surface="mode"))
    return thread


def title_from_message(message: str, *, limit: int = 60) -> str:
    words = " ".join(message.split())
    if len(words) <= limit:
        return words
    return words[: limit - 1].rsplit(" ", 1)[0] + "…"


ACTIVITY_DETAIL_MAX_CHARS = 4000
# What one entry's message may hold, as a chat message may
# (HAICO_MESSAGE_MAX_CHARS): the callers bound what they put in it (an MCP
# client's sentence: agent.steps.REASON_MAX_CHARS); this keeps any that
# does not from writing an entry no person could read, cut with a mark.
ACTIVITY_MESSAGE_MAX_CHARS = 20_000
ACTIVITY_CUT_MARK = " … (cut: too long to keep whole)"


def activity_log(
    *,
    thread: Thread,
    message: str,
    level: str = ActivityLogEntry.Level.INFO,
    turn_index: int | None = None,
    kind: str = ActivityLogEntry.Kind.OTHER,
    detail: str = "",
    person=None,
) -> ActivityLogEntry:
    """Record an entry of the thread's activity log; once committed it
    reaches every open tab of the thread (conversations.live). `person`:
    whose action it was (who answered, whose turn or token), docs/adr/0085.
    A person whose account was deleted meanwhile (a running turn's sender,
    docs/adr/0129) is kept by username, with no key to a row no longer there."""
    fields = {
        "thread": thread,
        "message": cut_to(encodable(message), ACTIVITY_MESSAGE_MAX_CHARS, ACTIVITY_CUT_MARK),
        "level": level,
        "turn_index": turn_index,
        "kind": kind if kind in ActivityLogEntry.Kind.values else ActivityLogEntry.Kind.OTHER,
        "detail": encodable(detail or "")[:ACTIVITY_DETAIL_MAX_CHARS],
    }
    try:
        return _activity_entry({**fields, **people.by(person)})
    except IntegrityError:
        # Inside a caller's transaction the key is checked at its commit, not here.
        if person is None or connection.in_atomic_block:
            raise
        return _activity_entry({**fields, **people.gone(person)})


@transaction.atomic
def _activity_entry(fields: dict) -> ActivityLogEntry:
    entry = ActivityLogEntry.objects.create(**fields)
    transaction.on_commit(functools.partial(live.publish_activity, entry))
    return entry


def _is_int(value) -> bool:
    # bool is an int subclass; a checkbox's True is not a number.
    return isinstance(value, int) and not isinstance(value, bool)


def _clean_feedback(*, thread: Thread, turn_index, scope, aspect, rating, comment, artifact) -> dict:
    """The feedback fields as they will be stored, or InvalidInput saying
    what is wrong. The form (conversations.forms) refuses the same first;
    this holds for every other caller."""
    # As stored now: the caller's copy may predate the turn's start or end.
    current = Thread.objects.get(pk=thread.pk)
    if not _is_int(turn_index) or not 1 <= turn_index <= current.turn_index:
        raise InvalidInput(f"Turn {turn_index!r} does not exist in this thread.")
    # The claim itself, stale or not: a turn whose server died is released
    # within seconds (conversations.turns.slot), and is rated after that.
    if TurnSlot.objects.filter(thread_id=thread.pk, turn_index=turn_index).exists():
        raise InvalidInput(f"Turn {turn_index} is still running; leave feedback once it has ended.")
    if scope not in Feedback.Scope.values:
        raise InvalidInput(f"Scope must be one of: {', '.join(Feedback.Scope.labels)}.")
    if aspect not in Feedback.Aspect.values:
        raise InvalidInput(f"Aspect must be one of: {', '.join(Feedback.Aspect.labels)}.")
    if not _is_int(rating) or not FEEDBACK_RATING_MIN <= rating <= FEEDBACK_RATING_MAX:
        raise InvalidInput(
            f"Rating must be a whole number from {FEEDBACK_RATING_MIN} (poor) to {FEEDBACK_RATING_MAX} (excellent)."
        )
    if scope == Feedback.Scope.ARTIFACT:
        if artifact is None:
            raise InvalidInput("Choose which artifact the feedback is about.")
        if artifact.thread_id != thread.pk or artifact.turn_index > turn_index:
            raise InvalidInput(f"That artifact is not part of this thread at turn {turn_index}.")
    else:
        artifact = None
    comment = clean_text(comment, label="Comment", max_chars=FEEDBACK_COMMENT_MAX_CHARS, allow_empty=True)
    return {
        "turn_index": turn_index,
        "scope": scope,
        "aspect": aspect,
        "rating": rating,
        "comment": comment,
        "artifact": artifact,
        "artifact_title": artifact.title if artifact else "",
    }


def _same_subject(*, thread: Thread, user, fields: dict):
    return Feedback.objects.filter(
        thread=thread,
        user=user,
        turn_index=fields["turn_index"],
        scope=fields["scope"],
        aspect=fields["aspect"],
        artifact=fields["artifact"],
    )


@transaction.atomic
def feedback_leave(
    *,
    thread: Thread,
    user: AbstractBaseUser,
    turn_index: int,
    rating: int,
    scope: str = Feedback.Scope.TURN,
    aspect: str = Feedback.Aspect.HELPFULNESS,
    comment: str = "",
    artifact: Artifact | None = None,
) -> Feedback:
    """The person's feedback on one turn. Leaving it again on the same
    scope, artifact and aspect changes the entry they left, so a turn holds
    one rating per subject and person."""
    fields = _clean_feedback(
        thread=thread,
        turn_index=turn_index,
        scope=scope,
        aspect=aspect,
        rating=rating,
        comment=comment,
        artifact=artifact,
    )
    existing = _same_subject(thread=thread, user=user, fields=fields).select_for_update().first()
    if existing is not None:
        return _save_feedback(existing, fields)
    feedback = Feedback.objects.create(thread=thread, user=user, **fields)
    _count_changed(feedback)
    return feedback


def _count_changed(feedback: Feedback) -> None:
    """Every open tab shows the turn's new count of entries once committed."""
    transaction.on_commit(
        functools.partial(
            live.publish_feedback_count, thread_id=feedback.thread_id, user=feedback.user, turn_index=feedback.turn_index
        )
    )


# The name the rest of the code base first knew it by.
feedback_add = feedback_leave


def _save_feedback(feedback: Feedback, fields: dict) -> Feedback:
    for name, value in fields.items():
        setattr(feedback, name, value)
    feedback.save()
    return feedback


@transaction.atomic
def feedback_update(
    *, feedback: Feedback, rating: int, scope: str, aspect: str, comment: str = "", artifact: Artifact | None = None
) -> Feedback:
    """Change an entry (it stays on its turn). Refused when the person
    already left another entry on the new subject: they change that one."""
    fields = _clean_feedback(
        thread=feedback.thread,
        turn_index=feedback.turn_index,
        scope=scope,
        aspect=aspect,
        rating=rating,
        comment=comment,
        artifact=artifact,
    )
    other = _same_subject(thread=feedback.thread, user=feedback.user, fields=fields).exclude(pk=feedback.pk)
    if other.exists():
        raise InvalidInput(
            f"You already rated {Feedback.Aspect(aspect).label.lower()} of that on turn {feedback.turn_index}; "
            "change that entry instead."
        )
    return _save_feedback(feedback, fields)


@transaction.atomic
def feedback_remove(*, feedback: Feedback) -> None:
    _count_changed(feedback)
    feedback.delete()


@transaction.atomic
def moderation_record(*, thread: Thread, staff_user: AbstractBaseUser, action: str, detail: str = "") -> ModerationAction:
    return ModerationAction.objects.create(thread=thread, staff_user=staff_user, action=action, detail=detail[:500])


@transaction.atomic
def layout_set_rail(*, user: AbstractBaseUser, rail: str, collapsed: bool) -> LayoutPreference:
    """Remember whether the person keeps a side rail of the workspace page
    collapsed. It belongs to the person, not to a thread, so no open tab is
    told: the next page they open is laid out this way (docs/adr/0022)."""
    field = {"left": "left_rail_collapsed", "right": "right_rail_collapsed"}.get(rail)
    if field is None:
        raise InvalidInput("Choose the left or the right rail.")
    layout, _ = LayoutPreference.objects.get_or_create(user=user)
    setattr(layout, field, bool(collapsed))
    layout.save(update_fields=[field, "updated_at"])
    return layout
