"""The tool calls of one model reply run one at a time, in the model's
order (docs/adr/0130).

`create_agent` starts each call of a reply as its own task of one graph
step, all at once. Left to run together, a call whose wrapper awaits (the
approval check reads the database before `remove_todos` or
`update_document` runs) is overtaken by a later call that does not: the
model's "drop step #2, then rename step #2" ran as rename, then a drop
refused because the step had changed. Each call's writes are based on what
the model was shown and on what the reply's earlier calls wrote
(agent.context.Seen), so they must land in the order the model wrote them.

The gate is a lock per run (AgentContext.calls), taken as the very first
await of the outermost tool-call wrapper. LangGraph starts the reply's
tasks in the order of its tool calls, and nothing on their way here
suspends, so they queue in that order; asyncio's lock wakes its waiters
first come, first served. A lock cannot deadlock on a call that is not
running: it waits only for the call holding it, which lets it go however
it ends (a result, an error, an approval's interrupt, the Stop button's
cancellation). A run resumed after an approval runs again only the calls
that were interrupted; the ones that completed are not waited for.

Costs microseconds: no database trip, and the database work of the calls
ran one at a time already (one database thread per run).
"""

from __future__ import annotations

from langchain.agents.middleware import AgentMiddleware

from ..context import AgentContext


class CallOrderMiddleware(AgentMiddleware):
    """Runs the tool calls of a reply one at a time, in the model's order
    (module docstring). Must be the outermost tool-call wrapper."""

    @property
    def name(self) -> str:
        return "CallOrder"

    async def awrap_tool_call(self, request, handler):
        context: AgentContext = request.runtime.context
        # The first await of the call: nothing before it may suspend.
        async with context.calls:
            return await handler(request)

    def wrap_tool_call(self, request, handler):
        # A synchronous run (none in the app) runs its calls as LangGraph does.
        return handler(request)
