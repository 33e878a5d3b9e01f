"""The JSON envelope every tool returns (docs/adr/0072).

Success: {"success": true, "summary": ..., ["skipped": true], ["artifact": {"artifact_type", "title"}, "artifact_id": N]}
Failure: {"success": false, "error": ..., ["refused": true], ["overlap": true]}
Rejected by the person (agent.approvals): {"success": false, "error": ..., "rejected": true}

The model reads it as the ToolMessage content; agent.turn reads it with
`parse_envelope` to tell the person's reasoning trace whether a step worked.
What a tool changed reaches the open tabs another way: the services announce
it after commit (workspace.events). An artifact's data is not echoed back:
the model has just written it in the call, and every later model call of
the thread would be sent it a second time; `get_artifact` fetches it
(docs/adr/0107).
"""

import json
import re

from pydantic import ValidationError

from ..steps import StepStatus


def success_envelope(summary: str, *, artifact: dict | None = None, artifact_id: int | None = None, skipped: bool = False) -> str:
    body: dict = {"success": True, "summary": summary}
    if skipped:
        body["skipped"] = True  # some targets were left alone (locked, missing)
    if artifact is not None:
        body["artifact"] = {"artifact_type": artifact["artifact_type"], "title": artifact.get("title", "")}
        body["artifact_id"] = artifact_id
    return json.dumps(body, ensure_ascii=False)


def failure_envelope(error: str, *, refused: bool = False, overlap: bool = False) -> str:
    """`refused`: the call was not allowed at all (a locked target), not a
    call that went wrong; the activity log tells them apart. `overlap`: a
    document edit overlapped what the person changed meanwhile, so nothing
    was written (an approval card says so: conversations.turns.run)."""
    body: dict = {"success": False, "error": error}
    if refused:
        body["refused"] = True
    if overlap:
        body["overlap"] = True
    return json.dumps(body, ensure_ascii=False)


def rejected_envelope(error: str) -> str:
    return json.dumps({"success": False, "error": error, "rejected": True}, ensure_ascii=False)


def step_status(content, *, error: bool = False) -> StepStatus:
    """How a tool call went, for the person's reasoning trace: "done",
    "skipped" (done in part: some targets were left alone), "rejected" (the
    person did not approve it) or "failed"."""
    envelope = parse_envelope(content)
    if envelope is None:
        return StepStatus.FAILED if error else StepStatus.DONE
    if not envelope["success"]:
        return StepStatus.REJECTED if envelope.get("rejected") else StepStatus.FAILED
    return StepStatus.SKIPPED if envelope.get("skipped") else StepStatus.DONE


# A call the turn's mode did not allow (agent.modes.out_of_mode_error).
_OUT_OF_MODE = re.compile(r"^Not run: .+? is not available in (\w+) mode")


def step_note(error: str) -> str:
    """Why a step did not run, in the person's words, when the trace can say
    more than "Failed": "Not available in Explore mode". "" otherwise."""
    match = _OUT_OF_MODE.match(error or "")
    return f"Not available in {match.group(1)} mode" if match else ""


def envelope_error(content) -> str:
    """The error a failure envelope carries, or ""."""
    envelope = parse_envelope(content)
    return str(envelope.get("error") or "") if envelope and not envelope["success"] else ""


def parse_envelope(content) -> dict | None:
    """The envelope as a dict, or None if `content` is not one of ours."""
    if not isinstance(content, str):
        return None
    try:
        body = json.loads(content)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("success"), bool):
        return None
    return body


def _location(loc: tuple) -> str:
    # Pydantic counts list items from 0; the model is told every index is
    # 1-based, so item positions are shown counted from 1 to avoid confusion.
    parts = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"item {part + 1}")
        else:
            parts.append(str(part))
    return " → ".join(parts)


def describe_validation_error(tool_name: str, error: ValidationError) -> str:
    """A short, actionable sentence list for arguments that failed the schema."""
    problems = []
    for detail in error.errors(include_url=False, include_context=False, include_input=False):
        message = detail.get("msg", "invalid value")
        message = message.removeprefix("Value error, ")
        where = _location(tuple(detail.get("loc", ())))
        problems.append(f"{where}: {message}" if where else message)
    listed = "; ".join(problems[:8])
    if len(problems) > 8:
        listed += f"; and {len(problems) - 8} more"
    return f"Invalid arguments for {tool_name}: {listed}. Nothing was changed; fix the arguments and call it again."
