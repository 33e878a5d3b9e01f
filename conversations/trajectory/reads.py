"""What the trajectory map and a turn's preview read from the database
(docs/adr/0016): a thread with no branch link in four plain queries (none
on its workspace page, whose chat has read the same rows), a family in
five, whatever its size (six when it is shared with anyone; docs/adr/0135,
0140), and the workspace after one turn."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import CharField, Exists, OuterRef
from django.db.models.functions import Cast, Substr

from workspace import plan_tree
from workspace.markdown import render_markdown
from workspace.models import Thread, ThreadMember, WorkspaceSnapshot

from ..models import BranchLink, Turn, TurnSlot
from ..selectors import has_active_branch_link, links_between_other_people, people_of, workspace_after_turn_in_history
from ..turns.slot import live_turn
from .layout import FamilyThread, Graph, TurnFact, assemble, family_of, lane_order

# How much of a user message a node shows (the rest is in its preview).
MESSAGE_START_CHARS = 60


def family_graph(*, thread: Thread, lone: LoneThreadRows | None = None) -> Graph:
    """The trajectory graph of `thread`'s family, as its page shows it.
    Its reads are unordered (`order_by()`): the graph is built from dicts and
    the lanes' own order, and a model's default ordering costs each
    statement its sorting and its building. A link counts only between
    threads of the same owner: a branch is its parent's owner's, and a
    parent the owner lost is not shown as where the branch came from.

    A branch whose parent was deleted, or has other people than it has,
    stands on its own, and the turns it shows from before its branch point
    are drawn as its own, read from the threads that ran them
    (`_inherited_turns`).

    A thread with no active branch link, to or from it (most threads; every
    turn's end reads its map, docs/adr/0135), is its own family: whether
    any link exists, then its row, its unfinished turns' statuses and its
    snapshots; any link at all takes the family's four reads below, after
    that first one. `lone`: those rows as the caller read them, for a
    thread it knows has no active link (`_lone_graph`, no read at all)."""
    if lone is not None:
        return _lone_graph(thread.pk, thread.title, lone)
    alone = _alone(thread)
    return alone if alone is not None else _family_graph(thread)


@dataclass(frozen=True, slots=True)
class LoneThreadRows:
    """What a caller has already read of a thread that no active branch
    link joins to another: its map is drawn from them, not read again (the
    workspace page's chat reads the same rows)."""

    messages: Iterable[tuple[int, str]]  # (turn index, its message) of each of its snapshots
    statuses: Mapping[int, str]  # turn index -> its turn row's status
    running: int | None  # its running turn, if any


def _family_graph(thread: Thread) -> Graph:
    """family_graph, read as a family: its links, then its members."""
    links, orphans = {}, {}
    for child, parent, point, created, parent_deleted in (
        BranchLink.objects.filter(
            status=BranchLink.Status.ACTIVE,
            thread__owner_id=thread.owner_id,
            thread__is_deleted=False,
            parent__owner_id=thread.owner_id,
        )
        .order_by()
        .values_list("thread_id", "parent_id", "branch_point_turn", "created_at", "parent__is_deleted")
    ):
        (orphans if parent_deleted else links)[child] = (parent, point, created)
    root, children = family_of(thread.pk, links)
    order = lane_order(root, children)
    # Each member's running-turn slot in the same read (a LEFT JOIN), and
    # whether it is shared with anyone.
    rows = (
        Thread.objects.filter(pk__in=order, is_deleted=False)
        .order_by()
        .select_related("turn_slot")
        .annotate(shared=Exists(ThreadMember.objects.filter(thread=OuterRef("pk"))))
        .only("id", "title", "turn_slot__turn_index", "turn_slot__since")
    )
    present = {row.pk: row for row in rows}
    if any(row.shared for row in present.values()):
        # Defence in depth (docs/adr/0084): a link between threads with
        # other people is cut as a deleted parent's is, whatever joined
        # them, so the map and every push of it show each person only
        # threads they may open. One more query, for a shared family only.
        cut = links_between_other_people({pk: links[pk] for pk in order if pk in links}, people_of(order))
        if cut:
            for branch in cut:
                orphans[branch] = links.pop(branch)
            root, children = family_of(thread.pk, links)
            order = lane_order(root, children)
    present.setdefault(thread.pk, thread)
    threads = []
    for pk in order:
        row = present.get(pk)
        if row is None:
            continue
        parent, point, _created = links.get(pk, (None, 0, None))
        if parent not in present:
            parent, point = None, 0
        threads.append(FamilyThread(pk, row.title, parent, point, live_turn(getattr(row, "turn_slot", None))))
    # Thread ids come back as text (Cast), mapped to the members' UUIDs by a
    # dict: building a UUID per row was most of the assembly time.
    by_text = {}
    for member in threads:
        by_text[member.pk.hex] = by_text[str(member.pk)] = member.pk
    members = [member.pk for member in threads]
    as_text = Cast("thread_id", output_field=CharField())
    # Only the turns that did not complete have a status worth a row here.
    # (Read with the snapshots through a subquery per row instead, a family
    # of a thousand turns took about 1 ms more: docs/adr/0135.)
    statuses = {
        (by_text[thread_id], index): status
        for thread_id, index, status in Turn.objects.filter(thread_id__in=members)
        .exclude(status=Turn.Status.COMPLETE)
        .order_by()
        .values_list(as_text, "index", "status")
    }
    turns = []
    complete = Turn.Status.COMPLETE
    for thread_id, index, message in (
        WorkspaceSnapshot.objects.filter(thread_id__in=members)
        .order_by()
        .values_list(as_text, "turn_index", Substr("user_message", 1, MESSAGE_START_CHARS + 1))
    ):
        pk = by_text[thread_id]
        turns.append(TurnFact(pk, index, _start(message), statuses.get((pk, index), complete)))
    for member in threads:
        if member.pk in orphans:
            parent, point, _created = orphans[member.pk]
            turns.extend(_inherited_turns(member.pk, parent, point))
    return assemble(current=thread.pk, threads=threads, turns=turns)


def _alone(thread: Thread) -> Graph | None:
    """`thread`'s graph when no active branch link joins it to any thread,
    else None (also for a deleted thread: the family's reads handle it).
    The same graph as the family's reads build for it: one lane, its turns
    with their statuses.

    Four plain statements (whether a link joins it, its row with its
    running-turn slot, its unfinished turns' statuses, its snapshots), not
    two with correlated subqueries (an `EXISTS` over the links in the row's
    read, a status per snapshot): the ORM built those in about 2 ms of CPU
    a read, every turn's end, where the four take about half of it
    (docs/adr/0140, round three)."""
    if has_active_branch_link(thread.pk):
        return None
    row = (
        Thread.objects.filter(pk=thread.pk, is_deleted=False)
        .order_by()
        .values_list("title", "turn_slot__turn_index", "turn_slot__since")
        .first()
    )
    if row is None:
        return None
    title, running_index, running_since = row
    statuses = dict(
        Turn.objects.filter(thread_id=thread.pk).exclude(status=Turn.Status.COMPLETE).order_by().values_list("index", "status")
    )
    messages = (
        WorkspaceSnapshot.objects.filter(thread_id=thread.pk)
        .order_by()
        .values_list("turn_index", Substr("user_message", 1, MESSAGE_START_CHARS + 1))
    )
    running = live_turn(TurnSlot(turn_index=running_index, since=running_since))
    return _lone_graph(thread.pk, title, LoneThreadRows(messages=messages, statuses=statuses, running=running))


def _lone_graph(thread_id, title: str, rows: LoneThreadRows) -> Graph:
    """The graph of a thread no active link joins to another: one lane, its
    turns with their statuses (a snapshot with no turn row is complete)."""
    complete = Turn.Status.COMPLETE
    turns = [
        # Cut before `_start` folds its spaces, as `_alone` reads it: the same words either way.
        TurnFact(thread_id, index, _start(message[: MESSAGE_START_CHARS + 1]), rows.statuses.get(index, complete))
        for index, message in rows.messages
    ]
    member = FamilyThread(thread_id, title, None, 0, rows.running)
    return assemble(current=thread_id, threads=[member], turns=turns)


def _inherited_turns(branch, parent, branch_point: int) -> list[TurnFact]:
    """Turns 1..branch_point of a branch whose parent was deleted, as its
    own: each read from the thread that ran it, up the branch links through
    deleted threads (their snapshots and turn rows stay)."""
    facts: list[TurnFact] = []
    ran_in, upto, seen = parent, branch_point, {branch}
    while upto >= 1 and ran_in not in seen:
        seen.add(ran_in)
        link = (
            BranchLink.objects.filter(thread_id=ran_in, status=BranchLink.Status.ACTIVE)
            .order_by()
            .values_list("parent_id", "branch_point_turn")
            .first()
        )
        lowest = link[1] + 1 if link is not None else 1
        if lowest <= upto:
            statuses = dict(
                Turn.objects.filter(thread_id=ran_in, index__range=(lowest, upto))
                .exclude(status=Turn.Status.COMPLETE)
                .order_by()
                .values_list("index", "status")
            )
            facts.extend(
                TurnFact(branch, index, _start(message), statuses.get(index, Turn.Status.COMPLETE))
                for index, message in WorkspaceSnapshot.objects.filter(thread_id=ran_in, turn_index__range=(lowest, upto))
                .order_by()
                .values_list("turn_index", Substr("user_message", 1, MESSAGE_START_CHARS + 1))
            )
        if link is None:
            break
        ran_in, upto = link[0], min(upto, link[1])
    return facts


def _start(message: str) -> str:
    if "\n" in message or "\t" in message or "\r" in message:
        message = " ".join(message.split())
    return message if len(message) <= MESSAGE_START_CHARS else message[:MESSAGE_START_CHARS].rstrip() + "…"


def preview_context(*, thread: Thread, turn_index: int) -> dict | None:
    """The workspace after `turn_index` as the preview shows it: the state a
    branch from there starts from (docs/adr/0014; for a turn a branch shows
    from before its branch point, read up the branch links), read-only
    plain values. None if it cannot be read."""
    after = workspace_after_turn_in_history(thread=thread, turn_index=turn_index)
    if after is None:
        return None
    numbers = plan_tree.outline_numbers([step["depth"] for step in after.todos])
    plan = [
        {"text": step["text"], "done": step["done"], "indent": step["depth"] * 1.2, "number": number}
        for step, number in zip(after.todos, numbers)
    ]
    return {
        "objective_text": after.objective_text,
        "preferences": after.preferences,
        "plan": plan,
        "document_title": after.document_title,
        "document_html": render_markdown(after.document_content),
    }
