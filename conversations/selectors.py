"""Reads for a thread's conversation: its activity log, turn errors and feedback.
Thread lookups scoped to their owner are workspace.selectors'."""

from dataclasses import dataclass

from django.db.models import Count, Q

from workspace.models import Thread, ThreadMember
from workspace.selectors import WorkspaceAfterTurn, threads_for_user, threads_shared_with, workspace_after_turn

from .models import ActivityLogEntry, BranchLink, Feedback, LayoutPreference, OpenPage, Turn


def activity_for(*, thread: Thread, limit: int = 50) -> list[ActivityLogEntry]:
    return list(ActivityLogEntry.objects.filter(thread=thread).select_related("person").order_by("-created_at")[:limit])


def turn_errors_for(*, thread: Thread) -> dict[int, str]:
    """Each failed turn's error message (the latest, when a turn has several)."""
    entries = ActivityLogEntry.objects.filter(
        thread=thread, level=ActivityLogEntry.Level.ERROR, turn_index__isnull=False
    ).order_by("created_at")
    return dict(entries.values_list("turn_index", "message"))


def turn_rows_for(*, thread: Thread) -> dict:
    """The thread's turn rows by turn index (conversations.models.Turn)."""
    return {row.index: row for row in Turn.objects.filter(thread=thread).select_related("person")}


def latest_turn_row(*, thread_id) -> "Turn | None":
    return Turn.objects.filter(thread_id=thread_id).order_by("-index").first()


def turn_of_sent_message(*, person, client_message_id: str) -> tuple[object, int] | None:
    """(thread id, turn index) of the turn this person's message with this
    id began, in any thread (a "Continue from here" runs it in a new branch);
    None when none did (docs/adr/0126)."""
    rows = Turn.objects.filter(client_message_id=client_message_id, person=person).values_list("thread_id", "index")
    return rows.first()


def feedback_on_turn(*, thread: Thread, user, turn_index: int) -> list[Feedback]:
    """What this person left on one turn, oldest first."""
    return list(
        Feedback.objects.filter(thread=thread, user=user, turn_index=turn_index)
        .select_related("artifact")
        .order_by("created_at", "pk")
    )


def feedback_counts(*, thread: Thread, user) -> dict[int, int]:
    """How many feedback entries this person left on each turn."""
    rows = Feedback.objects.filter(thread=thread, user=user).values("turn_index").annotate(n=Count("pk"))
    return {row["turn_index"]: row["n"] for row in rows.order_by()}


def open_pages_of(*, thread_id, user) -> list[str]:
    """The channel names of `user`'s open pages of the thread, in whichever
    process (conversations.presence)."""
    return list(OpenPage.objects.filter(thread_id=thread_id, user=user).values_list("channel_name", flat=True))


def open_pages_by_person(*, thread_id) -> dict:
    """Each person with the thread open now, with the channel names of their
    open pages of it (conversations.presence)."""
    pages: dict = {}
    for page in OpenPage.objects.filter(thread_id=thread_id).select_related("user"):
        pages.setdefault(page.user, []).append(page.channel_name)
    return pages


def feedback_of_user_or_none(*, thread: Thread, user, pk: int) -> Feedback | None:
    return Feedback.objects.filter(thread=thread, user=user, pk=pk).select_related("thread", "user").first()


# -- branches --


@dataclass(frozen=True)
class TurnVersions:
    """The versions of one turn across a thread's branches: every thread
    that ran its own turn N on the same turns 1..N-1 (docs/adr/0014)."""

    position: int  # 1-based, of the version this thread shows
    count: int
    previous_id: object | None  # the thread to open for the previous version
    next_id: object | None


def _family(thread: Thread, statuses=(BranchLink.Status.ACTIVE,), *, through_deleted: bool = True) -> tuple[dict, dict]:
    """({id: thread} of every thread linked to `thread` by branch links of
    `statuses` (active ones: those shown), {branch id: (parent id, branch point)}).

    `through_deleted=False`: a deleted thread is where the family ends, as
    the thread list and the trajectory map show it (a branch still being
    made is not deleted, only hidden), and so is a link to a thread with
    other people (`links_between_other_people`)."""
    # The owner's links in one read, walked here: a branch is its parent's
    # owner's (docs/adr/0014), and a statement per level up and per
    # generation down made a chain of branches of branches cost its page
    # two statements a level (docs/adr/0159).
    up: dict = {}
    down: dict = {}
    for child, parent, point, status, deleted, parent_deleted in (
        BranchLink.objects.filter(thread__owner_id=thread.owner_id, status__in=statuses)
        .order_by()
        .values_list("thread_id", "parent_id", "branch_point_turn", "status", "thread__is_deleted", "parent__is_deleted")
    ):
        up[child] = (parent, parent_deleted)
        down.setdefault(parent, []).append((child, point, status, deleted))
    root, seen = thread.pk, {thread.pk}
    while True:
        link = up.get(root)
        if link is None or link[0] in seen or (link[1] and not through_deleted):
            break
        seen.add(link[0])
        root = link[0]
    parents, frontier, ids = {}, [root], {root}
    while frontier:
        below = []
        for parent in frontier:
            for child, point, status, deleted in down.get(parent, ()):
                if deleted and status != BranchLink.Status.PENDING and not through_deleted:
                    continue
                if child not in ids:
                    ids.add(child)
                    parents[child] = (parent, point)
                    below.append(child)
        frontier = below
    if not through_deleted:
        ids, parents = _part_with_same_people(thread.pk, ids, parents)
    threads = {
        t.pk: t
        for t in Thread.objects.filter(pk__in=ids, owner_id=thread.owner_id).only("id", "turn_index", "is_deleted", "created_at")
    }
    return threads, parents


def people_of(thread_ids) -> dict:
    """Each thread's people as one comparable value: its members with their
    roles (the owner is never a row), empty when it is shared with no one.
    One query, whatever the number of threads."""
    people: dict = {pk: set() for pk in thread_ids}
    rows = ThreadMember.objects.filter(thread_id__in=list(people)).order_by().values_list("thread_id", "user_id", "role")
    for thread_id, user_id, role in rows:
        people[thread_id].add((user_id, role))
    return {pk: frozenset(members) for pk, members in people.items()}


def links_between_other_people(links: dict, people: dict) -> set:
    """The branches (keys of `links`: branch -> (parent, ...)) whose parent
    has other people than they have. Such a link is cut wherever a family
    is shown (docs/adr/0084): a family has one set of people, so everything
    its map and turn versions show, each of its people may open. Families
    are split that way when a branch cut from its family by a deleted
    parent got its own people and staff restore the parent, or restore a
    deleted branch whose family was shared meanwhile."""
    return {branch for branch, link in links.items() if branch in people and people.get(link[0]) != people[branch]}


def linked_threads_with_other_people(*, thread: Thread) -> list[Thread]:
    """The owner's live threads linked to `thread` by an active branch link
    (the thread it came from, its branches) whose people differ from its
    own: the links its map and arrows do not show (`links_between_other_people`)."""
    neighbours = list(
        Thread.objects.filter(
            Q(branch_link__parent=thread, branch_link__status=BranchLink.Status.ACTIVE)
            | Q(child_links__thread=thread, child_links__status=BranchLink.Status.ACTIVE),
            owner_id=thread.owner_id,
            is_deleted=False,
        )
        .distinct()
        .order_by("created_at")
    )
    people = people_of([thread.pk, *(other.pk for other in neighbours)])
    return [other for other in neighbours if people[other.pk] != people[thread.pk]]


def _part_with_same_people(start, ids: set, parents: dict) -> tuple[set, dict]:
    """The threads of `ids` joined to `start` by links between threads with
    the same people (`links_between_other_people`), and their links."""
    if start not in ids:
        return ids, parents
    people = people_of(ids)
    cut = links_between_other_people(parents, people)
    if not cut:
        return ids, parents
    kept = {branch: link for branch, link in parents.items() if branch not in cut}
    neighbours: dict = {}
    for branch, (parent, _point) in kept.items():
        neighbours.setdefault(branch, []).append(parent)
        neighbours.setdefault(parent, []).append(branch)
    part, frontier = {start}, [start]
    while frontier:
        for other in neighbours.get(frontier.pop(), ()):
            if other not in part:
                part.add(other)
                frontier.append(other)
    return part, {branch: link for branch, link in kept.items() if branch in part}


def family_ids(*, thread_id, pending: bool = False, through_deleted: bool = True) -> set:
    """The ids of every thread linked to `thread_id` by active branch links,
    its own included; with `pending`, also the branches still being made
    (hidden until their first turn begins), which already have the family's
    people (conversations.sharing). `through_deleted=False`: the family as
    it is shown, ending at a deleted thread and at a link to threads with
    other people (`_family`)."""
    thread = Thread.objects.filter(pk=thread_id).only("id", "owner_id").first()
    if thread is None:
        return set()
    statuses = (BranchLink.Status.ACTIVE, BranchLink.Status.PENDING) if pending else (BranchLink.Status.ACTIVE,)
    threads, _parents = _family(thread, statuses, through_deleted=through_deleted)
    return {*threads, thread.pk}


def family_ids_a_removal_reaches(*, thread_id) -> set:
    """The threads whose people a removal (or a role taken down, a link
    revoked) from `thread_id` changes (docs/adr/0084): the family as it is
    shown, its branches still being made included, and every deleted thread
    linked to it, through other deleted ones, so that restoring one later
    gives back nothing the owner took away. Not a live thread across a link
    to threads with other people, nor one beyond a deleted thread: that is
    a family of its own as shown, whose people the owner set apart, in its
    own dialog and map."""
    thread = Thread.objects.filter(pk=thread_id).only("id", "owner_id").first()
    if thread is None:
        return set()
    shown = family_ids(thread_id=thread_id, pending=True, through_deleted=False)
    statuses = (BranchLink.Status.ACTIVE, BranchLink.Status.PENDING)
    reached, frontier = set(shown), set(shown)
    while frontier:
        links = BranchLink.objects.filter(
            Q(parent_id__in=frontier, thread__is_deleted=True) | Q(thread_id__in=frontier, parent__is_deleted=True),
            status__in=statuses,
            thread__owner_id=thread.owner_id,
            parent__owner_id=thread.owner_id,
        ).values_list("thread_id", "thread__is_deleted", "parent_id", "parent__is_deleted")
        frontier = set()
        for child, child_deleted, parent, parent_deleted in links:
            for other, deleted in ((child, child_deleted), (parent, parent_deleted)):
                if deleted and other not in reached:
                    reached.add(other)
                    frontier.add(other)
    return reached


def has_active_branch_link(thread_id) -> bool:
    """Whether an active branch link joins the thread to another, as its branch or as its parent."""
    return BranchLink.objects.filter(Q(thread_id=thread_id) | Q(parent_id=thread_id), status=BranchLink.Status.ACTIVE).exists()


def turn_versions_for(*, thread: Thread) -> dict[int, TurnVersions]:
    """Turn index -> its versions, for the turns that have more than one."""
    return family_turn_versions(thread=thread) if has_active_branch_link(thread.pk) else {}


def family_turn_versions(*, thread: Thread) -> dict[int, TurnVersions]:
    """`turn_versions_for` a thread its caller knows to be joined to others."""
    # The family as the map shows it, ending at a deleted thread and at a
    # link to threads with other people: a person shared a branch left on
    # its own is never linked to the thread it came from (docs/adr/0084).
    threads, parents = _family(thread, through_deleted=False)
    threads[thread.pk] = thread

    def origin(thread_id, turn_index):
        """The thread where `thread_id`'s turn `turn_index` was run (0: the family's root)."""
        while thread_id in parents and parents[thread_id][1] >= turn_index:
            thread_id = parents[thread_id][0]
        return thread_id

    order = sorted(threads.values(), key=lambda t: (t.created_at, str(t.pk)))
    found = {}
    # A turn has a second version only where a branch of the family starts
    # (one at turn k runs its own turn k + 1): those turns, not every turn
    # of the thread, each walked up through every member (docs/adr/0159).
    starts = sorted({point + 1 for _parent, point in parents.values() if point < thread.turn_index})
    for turn_index in starts:
        base, mine = origin(thread.pk, turn_index - 1), origin(thread.pk, turn_index)
        homes = [
            t.pk
            for t in order
            if (t.pk == mine or (not t.is_deleted and t.turn_index >= turn_index))
            and origin(t.pk, turn_index) == t.pk
            and origin(t.pk, turn_index - 1) == base
        ]
        if len(homes) < 2 or mine not in homes:
            continue
        at = homes.index(mine)
        found[turn_index] = TurnVersions(
            position=at + 1,
            count=len(homes),
            previous_id=homes[at - 1] if at > 0 else None,
            next_id=homes[at + 1] if at + 1 < len(homes) else None,
        )
    return found


def _threads_back(thread: Thread, *, showing: int):
    """`thread`, then the thread it came from while it shows that one's
    turn `showing` (a turn before its branch point), and so on up the
    branch links, through a deleted thread too: its snapshots stay, and
    they are its branches' history."""
    seen = {thread.pk}
    yield thread
    while True:
        link = (
            BranchLink.objects.filter(thread=thread, branch_point_turn__gte=showing, status=BranchLink.Status.ACTIVE)
            .select_related("parent")
            .first()
        )
        if link is None or link.parent_id in seen:
            return
        thread = link.parent
        seen.add(thread.pk)
        yield thread


def turn_ran_in(*, thread: Thread, turn_index: int) -> Thread:
    """The thread that ran turn `turn_index` of `thread`'s history: the
    thread itself, or, for a turn a branch shows from before its branch
    point, the thread it came from."""
    return list(_threads_back(thread, showing=turn_index))[-1]


def workspace_after_turn_in_history(*, thread: Thread, turn_index: int) -> WorkspaceAfterTurn | None:
    """The workspace after turn `turn_index` of `thread`'s history: the
    snapshot the next turn took, in the thread that ran it (for a turn a
    branch shows from before its branch point, one up its links)."""
    for source in _threads_back(thread, showing=turn_index + 1):
        workspace = workspace_after_turn(thread=source, turn_index=turn_index)
        if workspace is not None:
            return workspace
    return None


def with_branch_points(threads: list[Thread]) -> list[Thread]:
    """Each thread with `branch_point` (the turn it was branched after, or
    None), `parent_id` and `parent_title`, from one query."""
    links = {
        link.thread_id: link
        for link in BranchLink.objects.filter(thread__in=threads, status=BranchLink.Status.ACTIVE).select_related("parent")
    }
    for thread in threads:
        link = links.get(thread.pk)
        thread.branch_point = link.branch_point_turn if link else None
        thread.parent_id = link.parent_id if link else None
        thread.parent_title = link.parent.title if link else ""
    return threads


def thread_list_for(*, user) -> list[Thread]:
    """The person's threads, each branch right under the thread it was
    branched from (`depth` 1 under its parent, 2 under a branch, ...); a
    branch whose parent is not listed (deleted) stands on its own."""
    threads = with_branch_points(threads_for_user(user=user))
    listed = {thread.pk for thread in threads}
    children: dict = {}
    for thread in threads:  # most recently active first, at every level
        key = thread.parent_id if thread.parent_id in listed else None
        children.setdefault(key, []).append(thread)
    ordered: list[Thread] = []

    def visit(parent_id, depth):
        for thread in children.get(parent_id, []):
            thread.depth = depth
            ordered.append(thread)
            visit(thread.pk, depth + 1)

    visit(None, 0)
    return ordered


# Families (a thread and its branches) and shared threads the list shows at
# first, and how many more each "Show older threads" adds: a person who
# writes every day has hundreds of threads within months, and the whole list
# was 1 MB and 150 ms at 500 of them.
THREADS_PER_PAGE = 50


@dataclass(frozen=True)
class ThreadListPage:
    """The thread list as shown: the `shown` most recently active families
    of the person's own threads (never cut inside one) and as many threads
    shared with them, and what is left of each."""

    threads: list[Thread]
    shared: list[Thread]
    shown: int
    older: int  # own families not shown
    older_shared: int
    first_older: Thread | None  # the first row the next page adds, to scroll to
    first_older_shared: Thread | None

    @property
    def next_shown(self) -> int:
        return self.shown + THREADS_PER_PAGE


def thread_list_page(*, user, shown: int = THREADS_PER_PAGE) -> ThreadListPage:
    ordered = thread_list_for(user=user)
    roots = [index for index, thread in enumerate(ordered) if thread.depth == 0]
    cut = roots[shown] if len(roots) > shown else len(ordered)
    shared = threads_shared_with(user=user)
    return ThreadListPage(
        threads=ordered[:cut],
        shared=shared[:shown],
        shown=shown,
        older=max(0, len(roots) - shown),
        older_shared=max(0, len(shared) - shown),
        first_older=ordered[cut] if cut < len(ordered) else None,
        first_older_shared=shared[shown] if len(shared) > shown else None,
    )


SWITCHER_LIMIT = 30


def threads_matching(*, user, query: str = "", limit: int = SWITCHER_LIMIT) -> list[Thread]:
    """The live threads the person owns or is on (docs/adr/0084) whose title
    contains `query` (any case), most recently active first: the top bar's
    thread switcher. A shared thread comes with its owner, whom it names."""
    threads = Thread.objects.filter(Q(owner=user) | Q(members__user=user), is_deleted=False).distinct()
    if query:
        threads = threads.filter(title__icontains=query)
    threads = threads.select_related("owner").only(
        "pk", "title", "last_activity_at", "owner_id", "owner__username", "owner__first_name", "owner__last_name"
    )
    return list(threads.order_by("-last_activity_at")[:limit])


def layout_for(*, user) -> LayoutPreference:
    """The person's workspace layout (an unsaved default when they never changed it)."""
    return LayoutPreference.objects.filter(user=user).first() or LayoutPreference(user=user)
