"""All writes to the workspace, one module per surface.

Views, agent tools, admin actions and any other client call these. Every
function is keyword-only and atomic, validates what only it can judge
(locks, indexes against the database, tree validity, versions), raises a
`WorkspaceError` subclass when it refuses (nothing changed), and announces
what it changed with `workspace.events.announce`, delivered after commit.
Preference writes take `respect_lock`: the agent path passes True (locked
items are skipped and reported), the person's path passes False.
"""
