"""Agent actions that are hard to undo wait for the person's approval (docs/adr/0017).

`ApprovalMiddleware` looks at every tool call before it runs. A call that
would

- replace the document and remove a large share of its text (at least
  DOCUMENT_REMOVED_SHARE of it, once it has DOCUMENT_MIN_CHARS characters:
  a short draft is cheap to write again),
- remove plan steps that have sub-steps, or
- remove preferences (unlocked ones: the tool skips locked ones anyway),

pauses the turn with LangGraph's `interrupt()`: the graph stops and the
pending call lives in the checkpointer, so the question survives a reload
and a server restart, and whichever process receives the answer resumes
the graph from there (conversations.turns). The interrupt's value is the
approval request (`approval_request`): plain words for the card and, for
the document, the text before and after for its preview.

On resume LangGraph runs the tool step again from its start, so everything
before `interrupt()` only reads: the rule is re-evaluated (on the current
workspace), and `interrupt()` then returns the person's decision instead of
pausing. The code that resumes the turn also names the call answered and the
answer in the run's context (`AgentContext.resuming`), and that is what
counts: the call it names keeps its answer even when the workspace changed
meanwhile so that the rule would no longer ask (a rejection must never run
the call), and an answer LangGraph hands to any other call is refused: the
call does not run (fail closed, docs/adr/0076). An approved call runs; a rejected one is
answered with a result telling the model the person said no and to continue
without it.

The calls of a reply after the paused one run before the answer comes (the
pause ends only the paused call: docs/adr/0130). One of them that would
change what the card lists (a step or a preference it removes, a sub-step
under one, any of the document) is held back instead: in the model's order
it comes after the call that waits, and run first it would either be undone
by the approved removal or make the card's rows differ from what the person
approved, so that the removal is refused. Its result tells the model which
call it waits for and to make it again once the person has answered.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from asgiref.sync import sync_to_async
from django.conf import settings
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt

from workspace import selectors
from workspace.db import usable_connections
from workspace.diff import REMOVED, DiffLine, diff_text
from workspace.errors import InvalidInput
from workspace.indices import index_as_shown
from workspace.models import DOCUMENT_TITLE_MAX_CHARS

from .approval_request import ApprovalRequest, DocumentChange, bounded, listed_fingerprint
from .context import AgentContext, PausedCall, ResumedCall, Seen
from .steps import REASON_MAX_CHARS
from .tools.envelope import failure_envelope, rejected_envelope

logger = logging.getLogger("haico.agent.approvals")

# Replacing the document asks first when it removes at least this share of
# the current text (characters, by the document diff), once the document
# has this many characters.
DOCUMENT_REMOVED_SHARE = 0.3
DOCUMENT_MIN_CHARS = 200

DOCUMENT, PLAN, PREFERENCES = "document", "plan", "preferences"

REJECTED = (
    "The person rejected this change, so nothing was changed: {summary} "
    "Continue without it and do not try it again unless they ask for it."
)
# Approved, but the rows it would remove are no longer the ones the card listed.
CHANGED_WHILE_ASKED = (
    "Not run: the rows this call removes changed while the person was asked (a sub-step added or rewritten, "
    "a preference reworded, unlocked or locked), so it would no longer remove exactly what they approved, and nothing "
    "was changed. Your next call is shown them as they are now; ask again if the removal is still wanted."
)
# A later call of the reply would change what the card of a call that waits
# for the person's answer lists.
HELD_BACK = (
    "Not run: {which} ({name}) waits for the person's approval, and this call would change "
    "{what} that it asks about, so it was held back to keep your calls in the order you wrote them; nothing was "
    "changed. Once the person has answered you are shown the {surface} as it is then: make this call again if it "
    "is still wanted."
)
# An answer arrived for a call the resumed run was not told about.
UNMATCHED_ANSWER = (
    "Not run: this change waits for the person's approval and no answer to it is known, so nothing was "
    "changed. Continue without it; ask the person first if it is still needed."
)


def removed_share(old: str, new: str) -> float:
    """The share of `old`'s characters that replacing it with `new` removes."""
    if not old:
        return 0.0
    removed = 0
    for row in diff_text(old, new, context=0).rows:
        if not isinstance(row, DiffLine):  # unchanged lines left out
            continue
        if row.kind == REMOVED:
            removed += len(row.text) + 1  # and its line break
        else:
            removed += sum(len(part.text) for part in row.segments if part.change == REMOVED)
    return min(1.0, removed / len(old))


def _document_request(thread, args: dict, seen: Seen) -> ApprovalRequest | None:
    content = args.get("content")
    if not isinstance(content, str):
        return None  # the tool refuses its arguments itself
    if len(content) > settings.HAICO_DOCUMENT_MAX_CHARS:
        # The tool refuses it, nothing written: no card to ask, and none
        # holding a text no document (nor a thread's archive) takes.
        return None
    document = selectors.document_for(thread=thread)
    old = document.content
    if len(old) < DOCUMENT_MIN_CHARS:
        return None
    share = removed_share(old, content)
    if share < DOCUMENT_REMOVED_SHARE:
        return None
    asked_title = args.get("title")
    title = asked_title if isinstance(asked_title, str) and asked_title.strip() else document.title
    if len(title) > DOCUMENT_TITLE_MAX_CHARS:
        return None  # refused by the tool as well (below)
    # The version the model wrote from, not the one now: the approved call
    # merges what anyone wrote since (the person, while the model wrote
    # its text) instead of writing over it.
    base = seen.document_version if seen.document_version is not None else document.version
    return ApprovalRequest(
        kind=DOCUMENT,
        summary=f"Replace the document “{document.title}”: about {round(share * 100)}% of its text would be removed.",
        document=DocumentChange(old=old, new=content, old_title=document.title, new_title=title, version=base),
    )


def _indices(args: dict) -> list[int]:
    indices = args.get("indices")
    if not isinstance(indices, list):
        return []
    return [i for i in indices if isinstance(i, int) and not isinstance(i, bool)]


def _named(ids_now: list[int], args: dict, shown: tuple[int, ...] | None, *, row: str, rows: str) -> list[int] | None:
    """The 0-based positions now of the rows the call's indices name, as the
    model was shown them (workspace.indices); None when one of them was
    removed since, which the tool refuses without changing anything, so
    there is nothing to ask. An index out of range is left to the tool."""
    positions = []
    for index in dict.fromkeys(_indices(args)):
        try:
            now = index_as_shown(ids_now, index, shown, row=row, rows=rows)
        except InvalidInput:
            return None
        if isinstance(now, int) and 1 <= now <= len(ids_now):
            positions.append(now - 1)
    return list(dict.fromkeys(positions))


def _plan_request(thread, args: dict, seen: Seen) -> ApprovalRequest | None:
    todos = selectors.todos_for(thread=thread)
    positions = _named([t.pk for t in todos], args, seen.plan_shown, row="Step", rows="the plan")
    details = []
    listed: list[int] = []
    steps = sub_steps = 0
    for position in positions or ():
        end = position + 1
        while end < len(todos) and todos[end].depth > todos[position].depth:
            end += 1
        listed += [todo.pk for todo in todos[position:end]]
        below = end - position - 1
        steps += 1
        sub_steps += below
        details.append(f"“{todos[position].text}”" + (f" and its {below} sub-step{'s' if below > 1 else ''}" if below else ""))
    if not sub_steps:
        return None
    listed_ids = set(listed)
    return ApprovalRequest(
        kind=PLAN,
        summary=f"Remove {steps} plan step{'s' if steps > 1 else ''} together with {sub_steps} "
        f"sub-step{'s' if sub_steps > 1 else ''}.",
        details=tuple(details),
        shown=seen.plan_shown,
        listed=tuple(sorted(set(listed))),
        # The words only: a sub-step ticked, or the group moved, is still what the card removes.
        listed_as=listed_fingerprint([(t.pk, t.text) for t in todos if t.pk in listed_ids]),
    )


def _preferences_request(thread, args: dict, seen: Seen) -> ApprovalRequest | None:
    preferences = selectors.preferences_for(thread=thread)
    positions = _named([p.pk for p in preferences], args, seen.preferences_shown, row="Preference", rows="the preferences")
    targets = [preferences[position] for position in positions or () if not preferences[position].locked]
    if not targets:
        return None
    return ApprovalRequest(
        kind=PREFERENCES,
        summary=f"Remove {len(targets)} preference{'s' if len(targets) > 1 else ''}.",
        details=tuple(f"“{p.title}” ({p.kind})" for p in targets),
        shown=seen.preferences_shown,
        listed=tuple(sorted({p.pk for p in targets})),
        listed_as=listed_fingerprint(sorted((p.pk, p.title, p.subtitle, p.kind) for p in targets)),
    )


RULES = {"update_document": _document_request, "remove_todos": _plan_request, "remove_preferences": _preferences_request}

# The tools that write what a card of each kind is about; a later call of
# one of them may be held back while such a card waits (module docstring).
WRITERS = {
    DOCUMENT: frozenset({"update_document", "append_to_document", "replace_in_document", "insert_in_document"}),
    PLAN: frozenset({"add_todos", "toggle_todos", "update_todos", "remove_todos"}),
    PREFERENCES: frozenset({"add_preferences", "update_preferences", "remove_preferences"}),
}


def may_ask(tool_call: dict) -> bool:
    """Whether `tool_call` is of a kind that may need the person's approval:
    only those are looked at in the database (approval_request), so the
    other calls make no trip to the database thread for it."""
    return (tool_call.get("name") or "") in RULES and isinstance(tool_call.get("args"), dict)


def approval_request(thread, tool_call: dict, seen: Seen | None = None) -> ApprovalRequest | None:
    """What the person is asked before `tool_call` runs, or None when it
    may run without asking; `seen`: what the model call that made it was
    shown. Only reads."""
    if not may_ask(tool_call):
        return None
    rule = RULES[tool_call["name"]]
    args = tool_call["args"]
    reason = args.get("action_and_reasoning")
    if isinstance(reason, str) and len(reason.strip()) > REASON_MAX_CHARS:
        # The tool refuses the call (agent.tools.decorator), nothing changed:
        # nothing to ask, and no card holding a reason no archive takes back.
        return None
    usable_connections()
    request = rule(thread, args, seen or Seen())
    if request is None:
        return None
    return bounded(replace(request, call_id=tool_call.get("id") or "", reason=reason if isinstance(reason, str) else ""))


def decision_approved(decision) -> bool:
    return isinstance(decision, dict) and decision.get("approved") is True


class ApprovalMiddleware(AgentMiddleware):
    """Pauses a hard-to-undo tool call for the person's approval (module docstring)."""

    @property
    def name(self) -> str:
        return "Approvals"

    @staticmethod
    def _ask(request, asked: ApprovalRequest | None):
        """The result to return instead of running the call, or None to run it."""
        call = request.tool_call
        call_id = call.get("id") or ""
        context: AgentContext = request.runtime.context
        resuming = context.resuming
        answered = resuming is not None and bool(call_id) and resuming.call_id == call_id
        if asked is None and not answered:
            return None
        # Pauses the turn, or, resumed, returns the answer LangGraph holds for this call.
        try:
            decision = interrupt(asked.to_json() if asked else {"call_id": call_id})
        except GraphInterrupt:
            if asked is not None:
                # The reply's later calls run before the answer: those that
                # would change what this card lists wait for it (_waited_for).
                context.paused.append(
                    PausedCall(position=_position(request), name=call.get("name") or "", kind=asked.kind, listed=asked.listed)
                )
            raise
        if resuming is None or not answered:
            logger.warning("refused call %s: resumed with an answer the turn did not name", call_id)
            return ToolMessage(
                content=failure_envelope(UNMATCHED_ANSWER, refused=True),
                tool_call_id=call["id"],
                name=call.get("name"),
                status="error",
            )
        if resuming.approved and decision_approved(decision):
            if resuming.listed is not None and _listed_changed(asked, resuming):
                # The rows changed while the card waited: a sub-step added
                # under a step it removes, a preference unlocked that it
                # left out, a step or preference it lists rewritten. The
                # person approved what the card listed.
                return ToolMessage(
                    content=failure_envelope(CHANGED_WHILE_ASKED, refused=True),
                    tool_call_id=call["id"],
                    name=call.get("name"),
                    status="error",
                )
            version = resuming.document_version
            if isinstance(version, int) and context.seen.document_version is None:
                # The resumed run has made no model call: the document
                # version the model wrote from is the one the person saw.
                context.seen.document_version = version
            return None
        summary = (asked.summary if asked else "") or "the change was not made."
        return ToolMessage(
            content=rejected_envelope(REJECTED.format(summary=summary)),
            tool_call_id=call["id"],
            name=call.get("name"),
            status="error",
        )

    async def awrap_tool_call(self, request, handler):
        context: AgentContext = request.runtime.context
        if _may_wait(request.tool_call, context):
            paused = await sync_to_async(_waited_for)(context.thread, request.tool_call, context)
            if paused is not None:
                return _held_back(request.tool_call, paused)
        if _refused_unasked(request.tool_call, context):
            return await handler(request)
        _restore_shown(request.tool_call, context)
        asked = (
            await sync_to_async(approval_request)(context.thread, request.tool_call, context.seen)
            if may_ask(request.tool_call)
            else None
        )
        return self._ask(request, asked) or await handler(request)

    def wrap_tool_call(self, request, handler):
        context: AgentContext = request.runtime.context
        if _may_wait(request.tool_call, context):
            paused = _waited_for(context.thread, request.tool_call, context)
            if paused is not None:
                return _held_back(request.tool_call, paused)
        if _refused_unasked(request.tool_call, context):
            return handler(request)
        _restore_shown(request.tool_call, context)
        return self._ask(request, approval_request(context.thread, request.tool_call, context.seen)) or handler(request)


def _position(request) -> int | None:
    """The 1-based place of the request's call in the reply that made it
    (the latest message with tool calls); None when it is not found."""
    call_id = request.tool_call.get("id")
    state = request.state
    messages = state.get("messages") if isinstance(state, dict) else getattr(state, "messages", None)
    for message in reversed(messages or []):
        ids = [c.get("id") for c in getattr(message, "tool_calls", None) or []]
        if ids:
            return ids.index(call_id) + 1 if call_id in ids else None
    return None


def _may_wait(tool_call: dict, context: AgentContext) -> bool:
    """Whether `tool_call` writes what the card of a paused call of this
    reply is about; only then is it looked at in the database (_waited_for).
    The call a resumed run was answered for is the paused one: it runs."""
    name = tool_call.get("name") or ""
    if context.resuming is not None and context.resuming.call_id == (tool_call.get("id") or ""):
        return False
    return any(name in WRITERS[paused.kind] for paused in context.paused)


def _waited_for(thread, tool_call: dict, context: AgentContext) -> PausedCall | None:
    """The paused call of this reply whose card `tool_call` would change,
    if any: any write of the document while a document card waits, and a
    call naming a step or preference the card lists (or, for a removal of
    steps, one whose sub-steps include a listed one; for an addition, a
    listed step as the parent). Only reads."""
    name = tool_call.get("name") or ""
    touched: set[int] | None = None
    for paused in context.paused:
        if name not in WRITERS[paused.kind]:
            continue
        if paused.listed is None:
            return paused
        if touched is None:
            usable_connections()
            touched = _rows_touched(thread, tool_call, context.seen)
        if touched & set(paused.listed):
            return paused
    return None


def _call_indices(tool_call: dict) -> list:
    """The indices a plan or preferences call names, whatever their kind:
    `indices`, each update's `index`, or an addition's `parent_index`."""
    args = tool_call.get("args")
    if not isinstance(args, dict):
        return []
    if isinstance(args.get("updates"), list):
        return [u.get("index") for u in args["updates"] if isinstance(u, dict)]
    if "parent_index" in args:
        return [args["parent_index"]]
    return _indices(args)


def _rows_touched(thread, tool_call: dict, seen: Seen) -> set[int]:
    """The ids of the steps or preferences `tool_call` would change, by its
    indices as the model was shown them; a removal of steps takes their
    sub-steps with it. An index the tool would refuse names nothing."""
    name = tool_call.get("name") or ""
    if name in WRITERS[PLAN]:
        todos = selectors.todos_for(thread=thread)
        rows: list = todos
        shown, row, rows_name = seen.plan_shown, "Step", "the plan"
    else:
        rows = selectors.preferences_for(thread=thread)
        shown, row, rows_name = seen.preferences_shown, "Preference", "the preferences"
    ids = [r.pk for r in rows]
    touched: set[int] = set()
    for index in _call_indices(tool_call):
        if not isinstance(index, int) or isinstance(index, bool):
            continue
        try:
            now = index_as_shown(ids, index, shown, row=row, rows=rows_name)
        except InvalidInput:
            continue
        if not isinstance(now, int) or not 1 <= now <= len(ids):
            continue
        end = now
        if name == "remove_todos":
            while end < len(rows) and rows[end].depth > rows[now - 1].depth:
                end += 1
        touched.update(ids[now - 1 : end])
    return touched


def _held_back(tool_call: dict, paused: PausedCall) -> ToolMessage:
    what, surface = {
        DOCUMENT: ("the document", "document"),
        PLAN: ("steps", "plan"),
        PREFERENCES: ("preferences", "preferences"),
    }[paused.kind]
    which = f"call {paused.position} of this reply" if paused.position is not None else "an earlier call of this reply"
    return ToolMessage(
        content=failure_envelope(HELD_BACK.format(which=which, name=paused.name, what=what, surface=surface), refused=True),
        tool_call_id=tool_call["id"],
        name=tool_call.get("name"),
        status="error",
    )


def _listed_changed(asked: ApprovalRequest | None, resuming: ResumedCall) -> bool:
    """Whether the rows the answered call would remove now are not the
    ones its card listed, or no longer say what they said on it (a card
    stored before it kept what they said is judged by its rows alone)."""
    if asked is None or asked.listed != resuming.listed:
        return True
    return bool(resuming.listed_as) and asked.listed_as != resuming.listed_as


def _restore_shown(tool_call: dict, context: AgentContext) -> None:
    """A run resumed on the person's answer has made no model call: the
    rows the answered call's indices name are the ones its card listed, as
    the model was shown them (docs/adr/0113)."""
    resuming = context.resuming
    if resuming is None or resuming.shown is None or resuming.call_id != (tool_call.get("id") or ""):
        return
    if resuming.shown_kind == PLAN and context.seen.plan_shown is None:
        context.seen.plan_shown = resuming.shown
    elif resuming.shown_kind == PREFERENCES and context.seen.preferences_shown is None:
        context.seen.preferences_shown = resuming.shown


def _refused_unasked(tool_call: dict, context: AgentContext) -> bool:
    """A whole-document rewrite from a model that has not seen all of a long
    document is refused by the tool (docs/adr/0109): the person is not asked
    to approve a removal that will not be made."""
    return tool_call.get("name") == "update_document" and not context.seen.saw_the_whole_document()
