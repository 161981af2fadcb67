"""OpenAI and Anthropic tool lists become catalogs named at registration, or are rejected."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from indexer.formats import CatalogError, detect_format, parse_catalog
from registry.ingest.catalog_dir import request_name
from tests.conftest import DATA

OPENAI = (DATA / "openai_tools.json").read_text()
ANTHROPIC = (DATA / "anthropic_tools.json").read_text()
WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def _problems(document: object, **kwargs: str) -> str:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(json.dumps(document), **{"name": "tools", **kwargs})
    return str(caught.value)


def test_openai_tool_list_maps_name_description_and_parameters() -> None:
    catalog = parse_catalog(OPENAI, name="assistant")
    assert (catalog.name, catalog.format) == ("assistant", "openai")
    weather, flights, email, clock = catalog.tools
    assert weather.id == "assistant/get_current_weather"
    assert weather.description.startswith("Get the current weather")
    assert weather.input_schema["required"] == ["location"]
    assert flights.input_schema["properties"]["cabin"]["enum"][0] == "economy"
    assert email.input_schema["properties"]["to"]["type"] == "array"
    # A function without `parameters` takes no arguments.
    assert clock.input_schema == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    "document",
    [
        [{"name": "get_weather", "description": "Weather.", "parameters": WEATHER_SCHEMA}],
        {"functions": [{"name": "get_weather", "parameters": WEATHER_SCHEMA}]},
        [{"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}],
        {"tools": [{"type": "function", "function": {"name": "get_weather"}}]},
    ],
    ids=["bare-functions", "legacy-functions-object", "responses-api", "request-body"],
)
def test_every_openai_form_is_detected_and_read(document: object) -> None:
    assert detect_format(document) == "openai"
    (tool,) = parse_catalog(json.dumps(document), name="weather").tools
    assert tool.name == "get_weather"


def test_anthropic_tool_list_maps_name_description_and_input_schema() -> None:
    catalog = parse_catalog(ANTHROPIC, name="claude-tools")
    assert catalog.format == "anthropic"
    assert [t.name for t in catalog.tools] == ["get_weather", "get_stock_price", "record_summary"]
    summary = catalog.tools[2].input_schema["properties"]["key_colors"]
    assert summary["items"]["required"] == ["r", "g", "b", "name"]


def test_an_anthropic_request_body_is_detected() -> None:
    document = {"tools": json.loads(ANTHROPIC)}
    assert detect_format(document) == "anthropic"


def test_mcp_results_are_still_told_apart_from_function_lists() -> None:
    mcp = {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}
    assert detect_format(mcp) == "mcp"
    assert detect_format({"tools": []}) == "mcp"


def test_a_format_can_be_forced() -> None:
    document = [{"name": "a", "input_schema": {"type": "object"}}]
    catalog = parse_catalog(json.dumps(document), name="forced", fmt="anthropic")
    assert catalog.format == "anthropic"
    # Read as OpenAI, the same entry has no `parameters`: a function without arguments.
    forced = parse_catalog(json.dumps(document), name="forced", fmt="openai")
    assert forced.tools[0].input_schema == {"type": "object", "properties": {}}
    assert "tools[0] 'a'.inputSchema: is required" in _problems({"tools": document}, fmt="mcp")


def test_function_lists_need_a_catalog_name_from_the_caller() -> None:
    message = _problems(json.loads(OPENAI), name="")
    assert "name: is required for an openai catalog" in message


def test_a_list_that_is_no_known_format_is_rejected() -> None:
    assert "cannot tell the format" in _problems([{"title": "x"}])
    assert "cannot tell the format" in _problems([])


def test_malformed_openai_entries_are_rejected_naming_each_entry() -> None:
    document: list[Any] = [
        {"type": "function", "function": {"name": "a", "parameters": {"type": "array"}}},
        {"type": "web_search"},
        "get_weather",
        {"type": "function", "function": {"description": "no name"}},
        {"type": "function", "function": {"name": "b", "description": 7}},
    ]
    message = _problems(document)
    assert "[0] 'a'.function.parameters: must be a JSON Schema" in message
    assert "[1].type: 'web_search' is a built-in OpenAI tool" in message
    assert "[2]: must be an object" in message
    assert "[3].function.name: is required" in message
    assert "[4] 'b'.function.description: must be a string" in message


def test_malformed_anthropic_entries_are_rejected_naming_each_entry() -> None:
    document = {
        "tools": [
            {"name": "a", "input_schema": {"type": "object", "properties": {"q": {"type": 7}}}},
            {"type": "web_search_20250305", "name": "web_search"},
            {"name": "c", "description": "No schema."},
            {"name": "a", "input_schema": {"type": "object"}},
        ]
    }
    message = _problems(document)
    assert "tools[0] 'a'.input_schema: is not a valid JSON Schema at properties/q/type" in message
    assert (
        "tools[1] 'web_search'.type: 'web_search_20250305' is an Anthropic server tool" in message
    )
    assert "tools[2] 'c'.input_schema: is required" in message
    assert "tool 'a': tool names must be unique" in message


def test_size_limits_are_shared_with_the_native_format() -> None:
    document = [{"name": "a", "description": "x" * 70_000, "input_schema": {"type": "object"}}]
    assert "[0] 'a'.description: must be at most 65536 characters" in _problems(document)


def test_every_file_but_a_native_one_is_named_by_its_stem(tmp_path: Path) -> None:
    for fixture in ("openai_tools.json", "anthropic_tools.json", "petstore.yaml"):
        path = DATA / fixture
        assert request_name(path, path.read_text()) == path.stem
    assert request_name(DATA / "mini.yaml", (DATA / "mini.yaml").read_text()) == ""
    # A forced format decides without reading the content.
    assert request_name(tmp_path / "x.json", "{broken", "openai") == "x"
    assert request_name(tmp_path / "x.yaml", "{broken", "native") == ""
