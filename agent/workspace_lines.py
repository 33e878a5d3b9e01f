"""How a plan step and a preference read to the model: one line each, in
the <workspace> block of its prompt and in the list tools' answers, both
starting with the index the tools take (docs/adr/0112)."""


def one_line(text: str) -> str:
    return " ".join(str(text).splitlines())


def preference_line(index: int, preference) -> str:
    """One preference as the model reads it, after the index its tools
    take (hard ones first): `#2 [soft] Short sentences — in the summary (locked)`."""
    line = f"#{index} [{preference.kind}] {one_line(preference.title)}"
    if preference.subtitle:
        line += f" — {one_line(preference.subtitle)}"
    if preference.locked:
        line += " (locked)"
    return line


def plan_line(index: int, step) -> str:
    """One plan step as the model reads it: the index its tools take, then
    the step indented under its parent with its outline number, which is
    not the index once a step has sub-steps (docs/adr/0112)."""
    return f"#{index} {'  ' * step.depth}{step.number} [{'x' if step.done else ' '}] {one_line(step.text)}"
