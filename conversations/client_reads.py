"""What an MCP token has seen of a thread: its document (docs/adr/0111),
and the rows it was listed with their #N indices (docs/adr/0117).

The in-app agent's whole rewrite of the document is refused unless its run
was shown every character of the version it writes from (agent.context.Seen).
An MCP client keeps no session here, so the same check is made from what
the token has been shown: the version it names, as get_workspace shows it
(its first characters, as the agent's prompt does), the parts of that
version it read with read_document, and the versions it wrote itself from
one it had seen whole. Those reads and writes are rows, so any server
process answers the next call of the client the same.

The plan's steps and the preferences are named by index. The in-app
agent's index names the row its prompt showed at that #N (docs/adr/0113);
a client's names the row at that #N in the latest listing the token was
given (get_workspace, list_todos, list_preferences, or a write's answer),
kept as one row per token and thread."""

from datetime import timedelta

from django.utils import timezone

from agent.context import Seen
from agent.prompt import DOCUMENT_INJECT_MAX_CHARS
from agent.workspace_lines import plan_line, preference_line
from workspace.models import Thread
from workspace.selectors import WorkspaceReading, document_for, document_version_text, workspace_reading_for

from .models import AccessToken, ClientDocumentRead, ClientWorkspaceListing

# Long enough for a client to read a long document in parts and then write;
# a read older than that is asked for again.
READS_KEPT_FOR = timedelta(days=1)


def _length(thread: Thread, version: int) -> int:
    """The length of `version` of the document; 0 for a version it never
    had (the save then says the version is unknown)."""
    document = document_for(thread=thread)
    if document.version == version:
        return len(document.content)
    found = document_version_text(thread=thread, version=version)
    return len(found[1]) if found is not None else 0


def seen_by(token: AccessToken, thread: Thread, *, base_version: int | None) -> Seen:
    """What a call of `token` is based on: the document version it writes
    from (`base_version`; None for a call that does not), with the parts of
    it the token read, and the rows it was last listed."""
    seen = Seen()
    listing = ClientWorkspaceListing.objects.filter(token=token, thread=thread).first()
    if listing is not None:
        _listed_into(seen, listing)
    if base_version is None:
        return seen
    length = _length(thread, base_version)
    seen.document_version = base_version
    seen.document_length = length
    seen.document_shown_chars = min(length, DOCUMENT_INJECT_MAX_CHARS)
    seen.document_read = list(
        ClientDocumentRead.objects.filter(token=token, thread=thread, version=base_version).values_list("version", "start", "end")
    )
    return seen


def remember(token: AccessToken, thread: Thread, seen: Seen, *, reads_before: int) -> None:
    """Store what the call showed the token: the parts it read (those past
    the first `reads_before`, which were loaded), and the versions it wrote
    from one it had seen whole, as read from start to end."""
    parts = list(seen.document_read[reads_before:])
    parts += [(version, 0, _length(thread, version)) for version in sorted(seen.document_written_whole)]
    if not parts:
        return
    now = timezone.now()
    ClientDocumentRead.objects.filter(token=token, thread=thread, created_at__lt=now - READS_KEPT_FOR).delete()
    ClientDocumentRead.objects.bulk_create(
        ClientDocumentRead(token=token, thread=thread, version=version, start=start, end=end, created_at=now)
        for version, start, end in parts
    )


# --- the rows a token was listed (docs/adr/0117) ---------------------------------

OBJECTIVE, PLAN, PREFERENCES = "objective", "plan", "preferences"
EVERY_PART = frozenset({OBJECTIVE, PLAN, PREFERENCES})


def _listed_into(seen: Seen, listing: ClientWorkspaceListing) -> None:
    """The listing as the in-app agent's run records what its prompt showed."""
    if listing.plan is not None:
        seen.plan_shown = tuple(step_id for step_id, _, _ in listing.plan)
        seen.plan_steps_shown = {step_id: (text, done) for step_id, text, done in listing.plan}
    if listing.preferences is not None:
        seen.preferences_shown = tuple(row[0] for row in listing.preferences)
        seen.preference_values_shown = {pk: (title, subtitle, kind) for pk, title, subtitle, kind in listing.preferences}
    if listing.objective is not None:
        seen.objective_shown = listing.objective


def _parts(reading: WorkspaceReading, parts) -> dict:
    """The listed parts of `reading` as a listing stores them (JSON lists)."""
    values = {
        OBJECTIVE: reading.objective_text or "",
        PLAN: [[step.pk, step.text, step.done] for step in reading.todos],
        PREFERENCES: [[p.pk, p.title, p.subtitle, p.kind] for p in reading.preferences],
    }
    return {part: values[part] for part in parts}


def remember_listed(token: AccessToken, thread: Thread, reading: WorkspaceReading, parts) -> None:
    """The token was given `parts` of the workspace as `reading` holds them:
    its next indices name those rows."""
    ClientWorkspaceListing.objects.update_or_create(
        token=token, thread=thread, defaults={**_parts(reading, parts), "listed_at": timezone.now()}
    )


def listed_as_now(token: AccessToken, thread: Thread, part: str) -> bool | None:
    """Whether the token's latest listing of `part` is what the thread holds
    now: nobody else has changed it since. None: it was never listed."""
    listed = ClientWorkspaceListing.objects.filter(token=token, thread=thread).values_list(part, flat=True).first()
    if listed is None:
        return None
    return listed == _parts(workspace_reading_for(thread=thread), [part])[part]


def listing_lines(reading: WorkspaceReading, part: str) -> str:
    """The plan or the preferences numbered as the tools take them, one line
    a row, as the list tools answer."""
    if part == PLAN:
        return "\n".join(plan_line(i, step) for i, step in enumerate(reading.todos, start=1)) or "(no plan)"
    return "\n".join(preference_line(i, p) for i, p in enumerate(reading.preferences, start=1)) or "(no preferences)"


def after_write(token: AccessToken, thread: Thread, part: str, knew: bool | None) -> str | None:
    """Keep the token's listing of `part` true after its write. A client
    that knew every row before the call knows them after it (its answer
    numbers them as they are now): the listing becomes the rows now. One
    whose listing was out of date (someone else changed `part` since) is
    given `part` as it is now, and that is its listing: returned, to add to
    the answer. Never listed: nothing is kept, and its indices count in the
    rows as they are."""
    if knew is None:
        return None
    reading = workspace_reading_for(thread=thread)
    remember_listed(token, thread, reading, [part])
    if knew or part == OBJECTIVE:
        # A refused objective names the one kept: the answer already says it.
        return None
    return listing_lines(reading, part)
