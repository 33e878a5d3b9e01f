"""Agent turns: the running-turn guard (`guard`), the per-process registry
of running turns (`registry`), one turn turned into chat fragments (`run`)
and the fragments themselves (`fragments`)."""
