"""What the model sees of HAICO, for the load bench's floor: the tool list
(names, descriptions, argument schemas) and the system prompt of a fresh
thread, as JSON on stdout. Run with Django set up (bench/load.py does, with
the configuration's environment); the floor itself never imports Django.

With the same tools and prompt, the floor's model calls carry the same
request bodies as the app's, so the comparison is about what the server
adds around the model, not about how much the model is told."""

import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "haico_site.settings")

import django  # noqa: E402

django.setup()

from agent.prompt import SYSTEM_PROMPT, render_reading  # noqa: E402
from agent.tools.registry import tool_specs  # noqa: E402
from workspace.selectors import WorkspaceReading  # noqa: E402

empty = WorkspaceReading(objective_text=None, preferences=[], todos=[], document=None, latest_artifact=None)
print(
    json.dumps(
        {
            "system_prompt": SYSTEM_PROMPT + "\n\n" + render_reading(empty),
            "tools": [
                {"name": s.name, "description": s.description, "parameters": s.full_schema.model_json_schema()}
                for s in tool_specs()
            ],
        }
    )
)
