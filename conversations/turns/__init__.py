"""Agent turns: the running-turn slot (`slot`), the message checks
(`message_checks`), approval claims (`approval_claims`), the per-process registry
of running turns (`registry`), one turn turned into chat fragments (`run`)
and the fragments themselves (`fragments`)."""
