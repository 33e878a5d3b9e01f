"""The workspace tools over the Model Context Protocol (docs/adr/0026).

An MCP client gets the in-app agent's own tools: the same names, the same
argument schemas the model is shown (each with its required
`action_and_reasoning` sentence), run by the same `run_tool_call` over the
same services and lock rules. What MCP adds, and only that:

- every tool takes `thread_id`: a client is not inside one thread's run;
- the tools that edit the document's text (`update_document`,
  `replace_in_document`, `insert_in_document`) also take `base_version`,
  the document version the client last read, so what the person wrote
  since is merged, never overwritten (docs/adr/0013); without it the call
  is refused. A whole rewrite is refused, as the in-app agent's is, unless
  the token was shown all of that version: get_workspace's part and what it
  read with read_document (docs/adr/0111);
- two reads the in-app agent does not need because its prompt carries the
  workspace: `list_threads` and `get_workspace` (the same workspace block
  the agent's prompt shows);
- `allow_removal` on `update_document` and `replace_in_document`: a call
  that would empty the document, or remove as much of it as makes the
  in-app agent ask the person first (agent.approvals), is refused unless
  it says so — the client's own host is the one to ask its user;
- annotations on every tool (read-only; else destructive or only adding,
  idempotent or not), so a client knows which calls to confirm.

A token acts as its person: only their live threads exist for it. A
read-only token lists and reads (list_threads, get_workspace and the tools
declared `read_only`); every other tool is refused with READ_ONLY_REFUSAL
before anything runs. What a token writes is recorded as its person's,
through MCP with the token's name (the document's and the objective's
history), never as an agent turn's. Every write is in the thread's activity
log with the token's name; the services announce it after commit, so open
tabs see it live (on one server process with the in-memory channel layer,
or across processes with Redis).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from functools import lru_cache

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from agent.approvals import DOCUMENT_MIN_CHARS, DOCUMENT_REMOVED_SHARE, removed_share
from agent.context import Author
from agent.prompt import render_reading
from agent.tools.decorator import (
    REASON_FIELD,
    ToolSpec,
    as_langchain_tool,
    run_tool_call,
)
from agent.tools.envelope import (
    describe_validation_error,
    failure_envelope,
    parse_envelope,
)
from agent.tools.registry import tool_specs
from workspace.errors import VIEW_ONLY_MESSAGE
from workspace.models import DocumentRevision, Thread
from workspace.selectors import (
    Access,
    document_for,
    thread_for_user,
    threads_for_user,
    threads_shared_with,
    workspace_reading_for,
)

from . import client_reads
from .models import AccessToken, ActivityLogEntry
from .services import activity_log

THREAD_FIELD = "thread_id"
BASE_FIELD = "base_version"
REMOVAL_FIELD = "allow_removal"
THREAD_DESCRIPTION = "The id of the thread to act on (from list_threads)."
BASE_DESCRIPTION = (
    "The document version your text is based on: the version attribute of <document> in get_workspace. "
    "Changes made since are merged with yours; overlapping ones are reported, nothing is overwritten."
)
REMOVAL_TOOLS = ("update_document", "replace_in_document")
REMOVAL_DESCRIPTION = (
    f"Set to true only after your user confirmed it: this call empties the document or removes at least "
    f"{DOCUMENT_REMOVED_SHARE:.0%} of its text (once it has {DOCUMENT_MIN_CHARS} characters). Without it such a "
    "call is refused and nothing changes. The text before stays in the document's history."
)
SERVER_INSTRUCTIONS = (
    "HAICO workspaces: each thread has an objective, preferences (some locked by the person), a nested "
    "plan, a markdown document and artifacts. Call list_threads to choose a thread, get_workspace to read "
    "it, then the workspace tools with that thread_id. Every tool also asks for one plain sentence, "
    "action_and_reasoning, which the person sees."
)
LIST_THREADS = "list_threads"
GET_WORKSPACE = "get_workspace"
READ_ONLY_REFUSAL = (
    "This token is read-only: it can list and read your threads but not change them. "
    "Make a token that is not read-only at /accounts/tokens/ to use {name}."
)


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict
    # MCP's tool annotations, by their wire names (readOnlyHint, ...).
    annotations: dict


def agent_parameters(spec: ToolSpec) -> dict:
    """The argument schema the in-app model is shown for `spec`."""
    return convert_to_openai_tool(as_langchain_tool(spec))["function"]["parameters"]


def _with_thread(parameters: dict, *, base_version: bool = False, removal: bool = False) -> dict:
    schema = json.loads(json.dumps(parameters))  # a copy: the agent's schema is left as it is
    extra = {THREAD_FIELD: {"type": "string", "format": "uuid", "description": THREAD_DESCRIPTION}}
    if base_version:
        extra[BASE_FIELD] = {"type": "integer", "minimum": 0, "description": BASE_DESCRIPTION}
    schema["properties"] = {**extra, **schema.get("properties", {})}
    schema["required"] = [*extra, *schema.get("required", [])]
    if removal:  # optional, so last
        schema["properties"][REMOVAL_FIELD] = {"type": "boolean", "default": False, "description": REMOVAL_DESCRIPTION}
    return schema


READ_ONLY = {"readOnlyHint": True, "openWorldHint": False}


def _annotations(spec: ToolSpec) -> dict:
    if spec.read_only:
        return READ_ONLY
    return {
        "readOnlyHint": False,
        "destructiveHint": spec.destructive,
        "idempotentHint": spec.idempotent,
        "openWorldHint": False,
    }


@lru_cache(maxsize=1)
def mcp_tools() -> tuple[McpTool, ...]:
    reads = (
        McpTool(
            LIST_THREADS,
            "List your threads, most recently active first: id, title, turns.",
            {"type": "object", "properties": {}},
            READ_ONLY,
        ),
        McpTool(
            GET_WORKSPACE,
            "Read one thread's workspace: objective, preferences, plan, document (with its "
            "version) and latest artifact, exactly as the in-app assistant sees it.",
            _with_thread({"type": "object", "properties": {}, "required": []}),
            READ_ONLY,
        ),
    )
    workspace = tuple(
        McpTool(
            spec.name,
            spec.description,
            _with_thread(agent_parameters(spec), base_version=spec.edits_document_text, removal=spec.name in REMOVAL_TOOLS),
            _annotations(spec),
        )
        for spec in tool_specs()
    )
    return reads + workspace


@lru_cache(maxsize=1)
def _specs() -> dict[str, ToolSpec]:
    return {spec.name: spec for spec in tool_specs()}


def is_read_tool(name: str) -> bool:
    """Whether the tool only reads: what a read-only token may call."""
    return name in (LIST_THREADS, GET_WORKSPACE) or (name in _specs() and _specs()[name].read_only)


@dataclass(frozen=True)
class CallResult:
    text: str
    is_error: bool


def _refused(message: str) -> CallResult:
    return CallResult(failure_envelope(message), True)


def _thread(token: AccessToken, value, *, level: Access) -> Thread | None:
    """The thread if the token's person has `level` on it now: a person
    removed from a shared thread reaches it no more (docs/adr/0084)."""
    try:
        thread_id = uuid.UUID(str(value))
    except ValueError:
        return None
    return thread_for_user(user=token.user, thread_id=thread_id, level=level)


def _is_whole_number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text_after(name: str, arguments: dict, current: str) -> str | None:
    """The document's text once the call is done, as far as can be told
    before running it (None: the call itself will refuse its arguments)."""
    if name == "update_document":
        content = arguments.get("content")
        return content if isinstance(content, str) else None
    old, new = arguments.get("old_text"), arguments.get("new_text")
    if not isinstance(old, str) or not isinstance(new, str) or not old or current.count(old) != 1:
        return None
    return current.replace(old, new, 1)


@dataclass(frozen=True)
class Removal:
    """What a call would take out of the document: `emptied`, or `share` of its text."""

    before_version: int
    before_chars: int
    emptied: bool
    share: float

    def describe(self, *, done: bool) -> str:
        if self.emptied:
            return f"{'Emptied' if done else 'would empty'} the document ({self.before_chars:,} characters)"
        return f"{'Removed' if done else 'would remove'} {self.share:.0%} of the document's {self.before_chars:,} characters"


def large_removal(thread: Thread, name: str, arguments: dict) -> Removal | None:
    """The removal a call would make when it is one to confirm: emptying a
    document that has text, or the share of it that makes the in-app agent
    ask the person first (docs/adr/0017)."""
    if name not in REMOVAL_TOOLS:
        return None
    document = document_for(thread=thread)
    current = document.content
    after = _text_after(name, arguments, current)
    if after is None or not current.strip():
        return None
    if not after.strip():
        return Removal(document.version, len(current), emptied=True, share=1.0)
    if len(current) < DOCUMENT_MIN_CHARS:
        return None
    share = removed_share(current, after)
    if share < DOCUMENT_REMOVED_SHARE:
        return None
    return Removal(document.version, len(current), emptied=False, share=share)


# The part of the workspace each call numbers for the client (its answer
# lists the rows with the #N the tools take) or writes by index: a client's
# index names the row it was last listed at that #N (docs/adr/0117).
PART_LISTED = {"list_todos": client_reads.PLAN, "list_preferences": client_reads.PREFERENCES}
PART_WRITTEN = {
    "set_objective": client_reads.OBJECTIVE,
    "add_todos": client_reads.PLAN,
    "toggle_todos": client_reads.PLAN,
    "update_todos": client_reads.PLAN,
    "remove_todos": client_reads.PLAN,
    "add_preferences": client_reads.PREFERENCES,
    "update_preferences": client_reads.PREFERENCES,
    "remove_preferences": client_reads.PREFERENCES,
}
PART_NAMES = {client_reads.PLAN: "the plan", client_reads.PREFERENCES: "the preferences"}


def _with_listing(envelope: str, part: str, lines: str) -> str:
    """The answer, with `part` as it is now: someone else changed it after
    the client's latest listing, so the client's next indices name these."""
    body = parse_envelope(envelope)
    if body is None:
        return envelope
    body["listed_now"] = (
        f"Someone else changed {PART_NAMES[part]} after you last listed it. As it is now, numbered as your "
        f"next calls' indices:\n{lines}"
    )
    return json.dumps(body, ensure_ascii=False)


def call_tool(token: AccessToken, name: str, arguments) -> CallResult:
    """Run one MCP tool call as `token`'s person. Synchronous (the ORM); never raises."""
    if not isinstance(arguments, dict):
        return _refused("The arguments must be a JSON object.")
    arguments = dict(arguments)
    if name == LIST_THREADS:
        threads = [
            {"id": str(t.pk), "title": t.title, "turns": t.turn_index, "last_activity_at": t.last_activity_at.isoformat()}
            for t in [*threads_for_user(user=token.user), *threads_shared_with(user=token.user)]
        ]
        return CallResult(json.dumps({"success": True, "threads": threads}, ensure_ascii=False), False)
    if name != GET_WORKSPACE and name not in _specs():
        return _refused(f"There is no tool named {name!r}. Call tools/list for the tools there are.")
    if token.read_only and not is_read_tool(name):
        return _refused(READ_ONLY_REFUSAL.format(name=name))
    if THREAD_FIELD not in arguments:
        return _refused(f"{THREAD_FIELD} is required: the id of one of your threads (list_threads).")
    level = Access.VIEW if is_read_tool(name) else Access.EDIT
    thread_id = arguments.pop(THREAD_FIELD)
    thread = _thread(token, thread_id, level=level)
    if thread is None:
        if level == Access.EDIT and _thread(token, thread_id, level=Access.VIEW) is not None:
            return _refused(VIEW_ONLY_MESSAGE)
        return _refused("No such thread among yours. Call list_threads for their ids.")
    if name == GET_WORKSPACE:
        reading = workspace_reading_for(thread=thread)
        client_reads.remember_listed(token, thread, reading, client_reads.EVERY_PART)
        return CallResult(render_reading(reading), False)

    spec = _specs()[name]
    base = None
    if spec.edits_document_text:
        if BASE_FIELD not in arguments:
            return _refused(
                f"{BASE_FIELD} is required: the version of the document you read (get_workspace), so the "
                "person's edits made since are merged rather than overwritten."
            )
        base = arguments.pop(BASE_FIELD)
        if not _is_whole_number(base) or base < 0:
            return _refused(
                f"{BASE_FIELD} must be a whole number, the version attribute of <document> in get_workspace "
                f'(for example 5, not "5"); got {json.dumps(base, ensure_ascii=False)[:40]}.'
            )
    allow_removal = arguments.pop(REMOVAL_FIELD, False) if name in REMOVAL_TOOLS else False
    if not isinstance(allow_removal, bool):
        return _refused(f"{REMOVAL_FIELD} must be true or false.")
    try:
        # The full schema, with the reasoning sentence: what LangChain checks for the in-app model.
        spec.full_schema.model_validate(arguments)
    except ValidationError as exc:
        return _refused(describe_validation_error(spec.name, exc))
    removal = large_removal(thread, name, arguments)
    if removal is not None and not allow_removal:
        return _refused(
            f"Nothing was changed: this call {removal.describe(done=False)}. Ask your user first; if they agree, call it "
            f"again with {REMOVAL_FIELD}: true (the text before stays in the document's history)."
        )
    reason = " ".join(str(arguments.get(REASON_FIELD, "")).split())
    author = Author(kind=DocumentRevision.Author.MCP, token_name=token.name, person=token.user)
    written_part = PART_WRITTEN.get(name)
    knew = client_reads.listed_as_now(token, thread, written_part) if written_part else None
    seen = client_reads.seen_by(token, thread, base_version=base) if spec.uses_seen else None
    reads_before = len(seen.document_read) if seen is not None else 0
    envelope = run_tool_call(spec, thread, arguments, turn_index=thread.turn_index, seen=seen, author=author)
    if seen is not None:
        client_reads.remember(token, thread, seen, reads_before=reads_before)
    if name in PART_LISTED:
        client_reads.remember_listed(token, thread, workspace_reading_for(thread=thread), [PART_LISTED[name]])
    if written_part:
        listed_now = client_reads.after_write(token, thread, written_part, knew)
        if listed_now is not None:
            envelope = _with_listing(envelope, written_part, listed_now)
    body = parse_envelope(envelope) or {}
    failed = not body.get("success", False)
    if not spec.read_only:
        outcome = f"failed: {body.get('error', '')}" if failed else "done"
        what = reason
        level = ActivityLogEntry.Level.INFO
        if removal is not None and not failed:
            # Said first and as a warning: the person should see it without opening anything.
            what = (
                f"{removal.describe(done=True)}, confirmed by the client; version "
                f"{removal.before_version} in the document's history keeps the text before. {reason}"
            )
            level = ActivityLogEntry.Level.WARNING
        activity_log(
            thread=thread,
            message=f"Through MCP (token “{token.name}”): {what} ({outcome})",
            level=level,
            turn_index=thread.turn_index or None,
            kind=ActivityLogEntry.Kind.MCP,
            person=token.user,
            detail=f"tool {spec.name}, token {token.prefix}…, arguments {json.dumps(arguments, ensure_ascii=False)[:500]}",
        )
    return CallResult(envelope, failed)
