"""Typed artifacts (charts, tables): JSON payloads, never markup."""

import json

from django.db import transaction

from ..errors import InvalidInput
from ..models import ARTIFACT_TITLE_MAX_CHARS, ARTIFACT_TYPE_MAX_CHARS, ARTIFACT_TYPE_PATTERN, Artifact, Thread
from ..text import clean_text, has_lone_surrogate
from .common import changed

ARTIFACT_PAYLOAD_MAX_BYTES = 1_000_000


@transaction.atomic
def artifact_create(*, thread: Thread, artifact_type: str, title: str, payload: dict, turn_index: int) -> Artifact:
    artifact_type = clean_text(artifact_type, label="Artifact type", max_chars=ARTIFACT_TYPE_MAX_CHARS)
    if not ARTIFACT_TYPE_PATTERN.fullmatch(artifact_type):
        raise InvalidInput("Artifact type must be a name of lowercase letters, digits and underscores, like bar_chart.")
    title = clean_text(title or "", label="Artifact title", max_chars=ARTIFACT_TITLE_MAX_CHARS, allow_empty=True)
    if not isinstance(payload, dict):
        raise InvalidInput("Artifact payload must be a JSON object.")
    try:
        # NaN / Infinity are not JSON: the database's JSON check would reject
        # them on insert (an IntegrityError, i.e. a 500) instead of a clear message.
        # Not ASCII-escaped, so a lone surrogate stays visible (jsonb refuses
        # its escape too); control characters such as NUL are still escaped.
        encoded = json.dumps(payload, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        raise InvalidInput("Artifact payload must be plain JSON (objects, lists, text, numbers).") from None
    if "\\u0000" in encoded:
        # PostgreSQL's jsonb cannot store the NUL escape.
        raise InvalidInput("Artifact payload cannot contain NUL characters.")
    if has_lone_surrogate(encoded):
        raise InvalidInput("Artifact payload contains a character that cannot be stored (a lone surrogate).")
    size = len(encoded.encode("utf-8"))
    if size > ARTIFACT_PAYLOAD_MAX_BYTES:
        raise InvalidInput(f"Artifact payload is too large ({size:,} bytes; the limit is {ARTIFACT_PAYLOAD_MAX_BYTES:,}).")
    artifact = Artifact.objects.create(
        thread=thread, artifact_type=artifact_type, title=title, payload=payload, turn_index=turn_index
    )
    changed(thread.pk, "artifacts", [artifact.pk])
    return artifact
