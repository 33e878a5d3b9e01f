"""What an MCP token has seen of a thread's document (docs/adr/0111).

The in-app agent's whole rewrite of the document is refused unless its run
was shown every character of the version it writes from (agent.context.Seen).
An MCP client keeps no session here, so the same check is made from what
the token has been shown: the version it names, as get_workspace shows it
(its first characters, as the agent's prompt does), the parts of that
version it read with read_document, and the versions it wrote itself from
one it had seen whole. Those reads and writes are rows, so any server
process answers the next call of the client the same."""

from datetime import timedelta

from django.utils import timezone

from agent.context import Seen
from agent.prompt import DOCUMENT_INJECT_MAX_CHARS
from workspace.models import Thread
from workspace.selectors import document_for, document_version_text

from .models import AccessToken, ClientDocumentRead

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
    """What a call of `token` that writes from `base_version` is based on;
    an empty Seen (nothing shown yet) for a call that only reads."""
    if base_version is None:
        return Seen()
    length = _length(thread, base_version)
    reads = ClientDocumentRead.objects.filter(token=token, thread=thread, version=base_version).values_list(
        "version", "start", "end"
    )
    return Seen(
        document_version=base_version,
        document_length=length,
        document_shown_chars=min(length, DOCUMENT_INJECT_MAX_CHARS),
        document_read=list(reads),
    )


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
