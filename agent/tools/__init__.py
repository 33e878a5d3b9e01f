"""The agent's workspace tools (core seed §5).

- `registry.build_tools(thread)`: the tools bound to one thread; `registry.TOOL_PANELS`
  / `panels_affected_by(name)`: which panels a successful call may change.
- `context.bind_turn_index(n)` / `get_turn_index()`: the turn artifacts are tagged with.
- `decorator.workspace_tool`: declare a tool as one decorated function.
- `envelope`: the JSON result every tool returns, and `parse_envelope` to read it.

Kept free of imports so `agent.tools.context` can be imported before Django's
apps are ready.
"""
