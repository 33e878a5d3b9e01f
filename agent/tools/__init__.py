"""The agent's workspace tools (docs/adr/0072).

- `registry.build_tools()`: every tool; each acts on the thread of the run's
  context (agent.context.AgentContext).
- `decorator.workspace_tool`: declare a tool as one decorated function.
- `envelope`: the JSON result every tool returns, and `parse_envelope` to read it.
"""
