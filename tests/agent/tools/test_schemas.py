"""The tool list the model sees: names, order, argument schemas, panels."""

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from agent.tools.registry import build_tools

pytestmark = pytest.mark.django_db

EXPECTED_ARGS = {
    "update_document": {"content", "title"},
    "append_to_document": {"text"},
    "replace_in_document": {"old_text", "new_text"},
    "insert_in_document": {"after_text", "text"},
    "read_document": {"start", "length"},
    "set_objective": {"text"},
    "add_todos": {"steps", "parent_index"},
    "toggle_todos": {"indices"},
    "update_todos": {"updates"},
    "remove_todos": {"indices"},
    "list_todos": set(),
    "add_preferences": {"items"},
    "list_preferences": set(),
    "update_preferences": {"updates"},
    "remove_preferences": {"indices"},
    "chart_generator": {"chart_type", "title", "description", "data", "x_axis_title", "y_axis_title", "style"},
    "list_artifacts": {"artifact_type", "limit"},
    "get_artifact": {"artifact_id", "start", "limit"},
    "data_table": {"title", "description", "columns", "rows"},
}
EXPECTED_REQUIRED = {
    "update_document": {"content"},
    "append_to_document": {"text"},
    "replace_in_document": {"old_text", "new_text"},
    "insert_in_document": {"after_text", "text"},
    "read_document": set(),
    "set_objective": {"text"},
    "add_todos": {"steps"},
    "toggle_todos": {"indices"},
    "update_todos": {"updates"},
    "remove_todos": {"indices"},
    "list_todos": set(),
    "add_preferences": {"items"},
    "list_preferences": set(),
    "update_preferences": {"updates"},
    "remove_preferences": {"indices"},
    "chart_generator": {"chart_type", "title", "data"},
    "list_artifacts": set(),
    "get_artifact": {"artifact_id"},
    "data_table": {"title", "columns", "rows"},
}


def _parameters(tool) -> dict:
    return convert_to_openai_tool(tool)["function"]["parameters"]


def test_build_tools_returns_the_seed_tools_in_seed_order_and_the_targeted_edits(thread):
    assert [tool.name for tool in build_tools()] == list(EXPECTED_ARGS)


def test_every_tool_requires_action_and_reasoning_first(thread):
    for tool in build_tools():
        parameters = _parameters(tool)
        assert "action_and_reasoning" in parameters["required"], tool.name
        assert next(iter(parameters["properties"])) == "action_and_reasoning", tool.name
        assert parameters["properties"]["action_and_reasoning"]["type"] == "string"
        assert "non-technical" in parameters["properties"]["action_and_reasoning"]["description"]
        # The same holds for the pydantic schema LangChain validates against.
        assert "action_and_reasoning" in tool.args_schema.model_json_schema()["required"]


def test_every_tool_has_the_seed_argument_names_and_required_set(thread):
    for tool in build_tools():
        parameters = _parameters(tool)
        assert set(parameters["properties"]) == EXPECTED_ARGS[tool.name] | {"action_and_reasoning"}, tool.name
        assert set(parameters.get("required", [])) == EXPECTED_REQUIRED[tool.name] | {"action_and_reasoning"}, tool.name
        assert tool.description and len(tool.description) < 300, tool.name


def test_nested_item_schemas_describe_seed_fields(thread):
    schemas = {tool.name: tool.args_schema.model_json_schema() for tool in build_tools()}
    defs = {}
    for schema in schemas.values():
        defs.update(schema.get("$defs", {}))
    assert set(defs["TodoStep"]["properties"]) == {"text", "depth"}
    assert set(defs["TodoUpdate"]["properties"]) == {"index", "text"}
    assert set(defs["PreferenceItem"]["properties"]) == {"title", "subtitle", "kind"}
    assert defs["PreferenceItem"]["properties"]["kind"]["enum"] == ["hard", "soft"]
    assert set(defs["PreferenceUpdate"]["properties"]) == {"index", "title", "subtitle", "kind"}
    assert set(defs["ChartStyle"]["properties"]) == {
        "palette",
        "show_grid",
        "show_legend",
        "donut",
        "stacked",
        "smooth",
        "label_size",
    }
    assert schemas["chart_generator"]["properties"]["chart_type"]["enum"] == ["line", "bar", "pie"]
    # What the schema promises is what the renderer draws (workspace.artifact_registry.STYLE_KINDS).
    style = defs["ChartStyle"]["properties"]
    assert style["stacked"]["description"].startswith("Line and bar charts")
    assert style["smooth"]["description"].startswith("Line charts only")
    assert style["donut"]["description"].startswith("Pie charts only")


def test_only_the_five_readers_skip_the_transaction():
    from agent.tools.decorator import registered_specs

    readers = {spec.name for spec in registered_specs() if spec.read_only}
    assert readers == {"read_document", "list_todos", "list_preferences", "list_artifacts", "get_artifact"}
