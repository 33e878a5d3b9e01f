"""Which turns of the map a person may open and continue from
(docs/adr/0016): only a turn the map draws as a node of one of their threads."""

from __future__ import annotations

import uuid

from workspace.errors import InvalidInput
from workspace.models import Thread, WorkspaceSnapshot
from workspace.selectors import Access, thread_for_user

from ..models import BranchLink
from ..selectors import links_between_other_people, people_of, turn_ran_in
from ..turns.slot import running_turn

NO_SUCH_TURN = "That turn is not on your trajectory map any more; reload the page and choose another."


def is_own_turn(*, thread: Thread, turn_index: int) -> bool:
    """Whether the map draws `turn_index` as a node of `thread`: an ended
    turn it has, past its branch point (up to there the turns are its
    parent's), or before it when the parent was deleted or has other
    people (then they are drawn as the branch's own: trajectory.reads)."""
    if turn_index < 1 or turn_index > thread.turn_index or turn_index == running_turn(thread):
        return False
    link = BranchLink.objects.filter(thread=thread, status=BranchLink.Status.ACTIVE).select_related("parent").first()
    if (
        link is not None
        and turn_index <= link.branch_point_turn
        and not link.parent.is_deleted
        and not links_between_other_people({thread.pk: (link.parent_id,)}, people_of([thread.pk, link.parent_id]))
    ):
        return False
    ran_in = turn_ran_in(thread=thread, turn_index=turn_index)
    return WorkspaceSnapshot.objects.filter(thread=ran_in, turn_index=turn_index).exists()


def continue_point(*, user, thread_id, turn_index) -> tuple[Thread, int]:
    """The thread and turn a message sent from a preview continues from, as
    the chat form carries them ("Continue from here"); InvalidInput when
    they are not a turn of the person's map."""
    try:
        thread_id = uuid.UUID(str(thread_id))
        turn_index = int(turn_index)
    except (TypeError, ValueError, AttributeError):
        raise InvalidInput(NO_SUCH_TURN) from None
    # Continuing branches the thread: a write (docs/adr/0084).
    thread = thread_for_user(user=user, thread_id=thread_id, level=Access.EDIT)
    if thread is None or not is_own_turn(thread=thread, turn_index=turn_index):
        raise InvalidInput(NO_SUCH_TURN)
    return thread, turn_index
