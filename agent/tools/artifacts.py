"""Past artifacts: an index, and one artifact's full payload by id (the
prompt shows only a pointer to the latest one: docs/adr/0072)."""

import functools
import json
import re

from workspace import selectors
from workspace.errors import InvalidInput, NotFound

from .decorator import workspace_tool
from .schemas import DOCUMENT_READ_MAX_CHARS, GetArtifactArgs, ListArtifactsArgs


@workspace_tool(
    name="list_artifacts",
    description="List the charts, tables and other artifacts made earlier in this conversation, newest first.",
    args_schema=ListArtifactsArgs,
    read_only=True,
)
def list_artifacts(thread, *, artifact_type: str | None = None, limit: int = 20) -> str:
    artifacts = selectors.artifacts_for(thread=thread, artifact_type=artifact_type, limit=limit)
    if not artifacts:
        return f"(no {artifact_type} artifacts yet)" if artifact_type else "(no artifacts yet)"
    return "\n".join(f"#{a.pk} [turn {a.turn_index}] {a.artifact_type}: {a.title}" for a in artifacts)


# What a read is paged by: the list a table's or a chart's payload keeps its
# data in (agent.tools.tables, agent.tools.charts), named as the model reads it.
_PAGED = {"data_table": ("rows", "table", "row", "rows")}
_CHART = ("data", "chart", "point", "points")


def _sent_size(value) -> int:
    """How many characters `value` takes in the envelope the model reads: the
    result is JSON inside the envelope's JSON, so its quotes are escaped again."""
    return len(json.dumps(json.dumps(value, ensure_ascii=False), ensure_ascii=False)) - 2


@workspace_tool(
    name="get_artifact",
    description="Fetch one past artifact by id (its type, title, turn and payload). A long table or chart comes "
    f"in parts of about {DOCUMENT_READ_MAX_CHARS} characters: the result's 'part' says which rows or points it "
    "holds and the start to ask for next. Refer to it by id afterwards rather than repeating its data.",
    args_schema=GetArtifactArgs,
    read_only=True,
)
def get_artifact(thread, *, artifact_id: int, start: int = 0, limit: int | None = None) -> str:
    # Ids beyond the database's integer range cannot exist; don't send them to the query.
    artifact = selectors.artifact_for(thread=thread, artifact_id=artifact_id) if 0 < artifact_id < 2**63 else None
    if artifact is None:
        raise NotFound(f"No artifact with id {artifact_id} in this conversation; call list_artifacts to see the ids.")
    result = {"id": artifact.pk, "type": artifact.artifact_type, "title": artifact.title, "turn_index": artifact.turn_index}
    payload = artifact.payload if isinstance(artifact.payload, dict) else {}
    paged = _PAGED.get(artifact.artifact_type) or (_CHART if artifact.artifact_type.endswith("_chart") else None)
    if paged is None or not isinstance(payload.get(paged[0]), list):
        return json.dumps({**result, **_whole(artifact, start=start)}, ensure_ascii=False)
    # A whole 10 000-row table is some 650 000 characters in one tool result,
    # which the context budget never trims from the turn that asked for it:
    # it is read a part at a time, as the document is (docs/adr/0142).
    key, noun, one, many = paged
    items = payload[key]
    total = len(items)
    if start and start >= total:
        raise InvalidInput(
            f"start={start} is past the end: the {noun} has {total} {one if total == 1 else many} (0 to {total - 1})."
        )
    budget = DOCUMENT_READ_MAX_CHARS - _sent_size({k: v for k, v in payload.items() if k != key})
    stop = total if limit is None else min(total, start + limit)
    end, used = start, 0
    while end < stop:
        size = _sent_size(items[end]) + 2  # and the ", " between items
        if end > start and used + size > budget:
            break  # at least one, so every call reads on
        used += size
        end += 1
    result["payload"] = {**payload, key: items[start:end]}
    if start > 0 or end < total:
        after = f"{total - end} more follow: call get_artifact with start={end}." if end < total else "That is the last."
        result["part"] = f"{many.capitalize()} {start} to {end - 1} of {total} (counting from 0). {after}"
    return json.dumps(result, ensure_ascii=False)


def _whole(artifact, *, start: int) -> dict:
    """An artifact that is neither a table nor a chart (one an archive
    brought in): its payload whole, or its first part when it is too long."""
    if start:
        raise InvalidInput(
            f"start={start}: only a table's rows and a chart's points are read in parts; "
            f"this {artifact.artifact_type} is read with start=0."
        )
    if _sent_size(artifact.payload) <= DOCUMENT_READ_MAX_CHARS:
        return {"payload": artifact.payload}
    text = json.dumps(artifact.payload, ensure_ascii=False)

    def part(shown: int) -> str:
        return (
            f"The first {shown} of {len(text)} characters of the payload's JSON; "
            "an artifact other than a table or a chart cannot be read further."
        )

    # The text is escaped twice on its way to the model (a string in the
    # result's JSON, which is a string in the envelope's): a quote in the
    # payload, `\"` in its JSON, is sent as eight characters, so the cut is
    # measured as sent, as a table's rows are (docs/adr/0142).
    room = DOCUMENT_READ_MAX_CHARS - _sent_size({"payload_text": "", "part": part(len(text))})
    shown = _head_within(text, room)
    return {"payload_text": shown, "part": part(len(shown))}


def _head_within(text: str, room: int) -> str:
    """The longest start of `text` (JSON) that is at most `room` characters
    as sent (text, escaped twice), cut between whole escapes (`\\"`,
    `\\u00e9`) and whole surrogate pairs, so the model is never handed half
    of one."""
    end, used = 0, 0
    while end < len(text):
        unit = _UNIT.match(text, end)
        step = unit.end() - end if unit else 1
        size = sum(_sent_char_size(c) for c in text[end : end + step])
        if used + size > room:
            break
        used += size
        end += step
    return text[:end]


# An escape of the JSON text (a backslash and what it escapes: one
# character, or `u` and four hex digits; a pair of escaped surrogates
# together), or a pair of surrogate code points.
_UNIT = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.|[\ud800-\udbff][\udc00-\udfff]",
    re.DOTALL,
)


@functools.cache
def _sent_char_size(char: str) -> int:
    # JSON escapes a character alone, whatever is around it.
    return len(json.dumps(json.dumps(char, ensure_ascii=False), ensure_ascii=False)) - 6
