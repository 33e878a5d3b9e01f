"""`@workspace_tool`: one decorated function per LLM-facing operation (docs/adr/0072).

A body is a plain synchronous function `body(thread, **args) -> str | (str, artifact)`
that makes one workspace service call (agent path: `respect_lock=True`) and
returns the summary the model reads, optionally with a typed artifact
`{"artifact_type", "title", "payload"}`. The decorator does everything else:

- extends the args schema with the required `action_and_reasoning` sentence,
  which it pops and logs, so bodies and services never see it;
- finds the thread and turn in the run's context (`agent.context.AgentContext`,
  injected by LangGraph as the tool's `runtime`), so one compiled agent
  serves every thread; a body declared `uses_seen` also gets what the
  latest model call was shown (`seen=`, agent.context.Seen), and an
  `authored` body whom its writes are recorded as (`author=`,
  agent.context.Author: the agent, or the person through MCP);
- runs the body in its own database transaction, off the event loop through
  asgiref's `sync_to_async` (the ORM is synchronous); the services announce
  what they changed after commit, which is how the open tabs hear of it;
- persists a returned artifact tagged with the turn index;
- turns every expected failure (bad arguments, `WorkspaceError`) into a
  failure envelope the model can act on, and anything unexpected into a
  generic one with the traceback logged. A tool never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Annotated, Any

from asgiref.sync import sync_to_async
from django.db import transaction
from langchain.tools import ToolRuntime
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field, StringConstraints, ValidationError

from workspace.db import usable_connections
from workspace.errors import PreferenceLocked, WorkspaceError
from workspace.models import Thread
from workspace.services.artifacts import artifact_create

from ..context import AGENT_AUTHOR, AgentContext, Author, Seen
from ..steps import REASON_MAX_CHARS
from .envelope import describe_validation_error, failure_envelope, success_envelope
from .text import Summary

logger = logging.getLogger("haico.agent.tools")

REASON_FIELD = "action_and_reasoning"
REASON_DESCRIPTION = (
    "One short, plain, non-technical sentence shown to the user saying what you are doing "
    "and why. Never mention tool names, arguments or ids."
)
ToolBody = Callable[..., "str | Summary | tuple[str, dict]"]


class NoArgs(BaseModel):
    """Arguments of a tool that takes none (besides the reasoning sentence)."""


class _Reasoned(BaseModel):
    # Bounded as every text a person reads (agent.steps.REASON_MAX_CHARS): a longer one is refused.
    action_and_reasoning: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=REASON_MAX_CHARS)] = (
        Field(description=REASON_DESCRIPTION)
    )


def with_reasoning(schema: type[BaseModel]) -> type[BaseModel]:
    """`schema` plus the required reasoning field, listed first so a model writes
    the sentence before the (possibly long) arguments and the person sees it early.
    Subclassing keeps the schema's own validators."""
    if REASON_FIELD in schema.model_fields:
        raise TypeError(f"{schema.__name__} must not declare {REASON_FIELD}; the decorator adds it.")
    # Pydantic collects fields from the bases in reverse MRO order, so the
    # reasoning field (from the last base) comes first.
    return type(schema.__name__, (schema, _Reasoned), {"__module__": schema.__module__, "__doc__": schema.__doc__})


class EditOverlapped(WorkspaceError):
    """A document edit overlapped what the person changed since the version
    it was based on; nothing was written (docs/adr/0013). Its failure
    envelope is marked `overlap`."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args_schema: type[BaseModel]  # as the body sees it, without the reasoning field
    full_schema: type[BaseModel]  # what the model sees
    body: ToolBody
    read_only: bool = False
    uses_seen: bool = False
    # Writes the document's text from the version the caller was shown: an
    # MCP client names that version (base_version, docs/adr/0026).
    edits_document_text: bool = False
    authored: bool = False
    # What a client outside the app is told before it calls (MCP's tool
    # annotations, docs/adr/0026): it may overwrite or remove what is there
    # (else it only adds), and calling it again with the same arguments
    # changes nothing more.
    destructive: bool = False
    idempotent: bool = False


_REGISTERED: dict[str, ToolSpec] = {}


def workspace_tool(
    *,
    name: str,
    description: str,
    args_schema: type[BaseModel] = NoArgs,
    read_only: bool = False,
    uses_seen: bool = False,
    edits_document_text: bool = False,
    authored: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
    register: bool = True,
) -> Callable[[ToolBody], ToolBody]:
    """Declare an agent tool. `read_only` tools change nothing, so they run
    without a transaction. A `uses_seen` body takes `seen=` (what the
    latest model call was shown; None outside a run); an `authored` one
    takes `author=` (agent.context.Author) for the history rows it writes.
    `destructive` and `idempotent` describe a writing tool (ToolSpec)."""
    if read_only and (destructive or idempotent):
        raise TypeError(f"{name}: a read-only tool is neither destructive nor idempotent in this sense.")

    def decorate(body: ToolBody) -> ToolBody:
        spec = ToolSpec(
            name=name,
            description=description,
            args_schema=args_schema,
            full_schema=with_reasoning(args_schema),
            body=body,
            read_only=read_only,
            uses_seen=uses_seen or edits_document_text,
            edits_document_text=edits_document_text,
            authored=authored,
            destructive=destructive,
            idempotent=idempotent,
        )
        if register:
            if name in _REGISTERED and _REGISTERED[name].body is not body:
                raise ValueError(f"Two workspace tools are named {name!r}.")
            _REGISTERED[name] = spec
        body.tool_spec = spec  # type: ignore[attr-defined]  # the spec, for whoever holds the function
        return body

    return decorate


def registered_specs() -> list[ToolSpec]:
    """Every registered tool, in registration (import, then definition) order."""
    return list(_REGISTERED.values())


# --- running one call --------------------------------------------------------------


def _split_result(name: str, result) -> tuple[str | Summary, dict | None]:
    if isinstance(result, str | Summary):
        return result, None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], str) and isinstance(result[1], dict):
        artifact = result[1]
        if "artifact_type" not in artifact or "payload" not in artifact:
            raise TypeError(f"Tool {name} returned an artifact without artifact_type/payload.")
        return result
    raise TypeError(f"Tool {name} returned {type(result).__name__}; expected str or (str, artifact dict).")


def run_tool_call(
    spec: ToolSpec,
    thread: Thread,
    arguments: dict[str, Any],
    *,
    turn_index: int = 0,
    seen: Seen | None = None,
    author: Author = AGENT_AUTHOR,
) -> str:
    """Run one call synchronously and return its envelope. Never raises.
    `author`: whom the writes are recorded as (the in-app agent unless an
    MCP client calls)."""
    usable_connections()
    arguments = dict(arguments)
    reason = arguments.pop(REASON_FIELD, "")
    logger.info("tool %s (thread %s, turn %s): %s", spec.name, thread.pk, turn_index, reason)
    try:
        # LangChain already validated against the full schema; this turns nested
        # pydantic objects into the plain dicts and lists the services take, and
        # covers callers that bypass LangChain (e.g. `run_tool_call` directly).
        values = spec.args_schema.model_validate(arguments).model_dump()
        # Read-only tools skip the transaction: on SQLite (IMMEDIATE mode) it
        # would take the write lock and make concurrent turns wait for a read.
        with nullcontext() if spec.read_only else transaction.atomic():
            extra: dict[str, Any] = {"seen": seen} if spec.uses_seen else {}
            if spec.authored:
                extra["author"] = author
            summary, artifact = _split_result(spec.name, spec.body(thread, **values, **extra))
            artifact_id = None
            if artifact is not None:
                row = artifact_create(
                    thread=thread,
                    artifact_type=artifact["artifact_type"],
                    title=artifact.get("title") or "",
                    payload=artifact["payload"],
                    turn_index=turn_index,
                )
                artifact_id = row.pk
                artifact = {"artifact_type": row.artifact_type, "title": row.title}
    except ValidationError as exc:
        logger.info("tool %s rejected its arguments: %s", spec.name, exc)
        return failure_envelope(describe_validation_error(spec.name, exc))
    except WorkspaceError as exc:
        logger.info("tool %s failed: %s", spec.name, exc.message)
        return failure_envelope(exc.message, refused=isinstance(exc, PreferenceLocked), overlap=isinstance(exc, EditOverlapped))
    except Exception:
        logger.exception("tool %s crashed on thread %s", spec.name, thread.pk)
        return failure_envelope(
            f"An internal error stopped {spec.name}; nothing was changed. Try once more; "
            "if it fails again, tell the user this step could not be done."
        )
    if isinstance(summary, Summary):
        return success_envelope(summary.text, artifact=artifact, artifact_id=artifact_id, skipped=summary.skipped)
    return success_envelope(summary, artifact=artifact, artifact_id=artifact_id)


def as_langchain_tool(spec: ToolSpec) -> StructuredTool:
    """The LangChain tool for `spec`; it acts on the thread of the run's context."""

    def call(runtime: ToolRuntime, **arguments) -> str:
        context: AgentContext = runtime.context
        return run_tool_call(
            spec, context.thread, arguments, turn_index=context.turn_index, seen=context.seen, author=context.author
        )

    async def acall(runtime: ToolRuntime, **arguments) -> str:
        context: AgentContext = runtime.context
        return await sync_to_async(run_tool_call, thread_sensitive=True)(
            spec, context.thread, arguments, turn_index=context.turn_index, seen=context.seen, author=context.author
        )

    def on_invalid_arguments(error: ValidationError) -> str:
        # LangChain validates before the body runs; without this a malformed
        # call would raise out of the tools node instead of reaching the model.
        logger.info("tool %s rejected its arguments: %s", spec.name, error)
        return failure_envelope(describe_validation_error(spec.name, error))

    return StructuredTool(
        name=spec.name,
        description=spec.description,
        args_schema=spec.full_schema,
        func=call,
        coroutine=acall,
        # The schemas are pydantic 2 models: no pydantic 1 error arrives.
        handle_validation_error=on_invalid_arguments,  # type: ignore[arg-type]
    )
