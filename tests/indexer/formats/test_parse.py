"""Catalog parsing and validation: every rule named, nothing half-accepted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from indexer.formats import CatalogError, parse_catalog
from registry.ingest.catalog_dir import catalog_files, request_name
from tests.conftest import CATALOGS, DATA

MINI = (DATA / "mini.yaml").read_text()


def _native(**changes: object) -> str:
    document = yaml.safe_load(MINI)
    document.update(changes)
    return yaml.safe_dump(document)


def _with_tool(**changes: object) -> str:
    document = yaml.safe_load(MINI)
    document["tools"][0].update(changes)
    return yaml.safe_dump(document)


def _problems(content: str, **kwargs: str) -> str:
    with pytest.raises(CatalogError) as caught:
        parse_catalog(content, **kwargs)
    return str(caught.value)


def test_native_catalog_maps_every_field() -> None:
    catalog = parse_catalog(MINI)
    assert catalog.name == "mini"
    assert catalog.version == "1.0.0"
    assert catalog.default_scopes == {"mini:read"}
    forecast, currency, delete = catalog.tools
    assert forecast.id == "mini/get_weather_forecast"
    assert forecast.examples == ("will it rain in Paris tomorrow",)
    assert currency.output_schema == {
        "type": "object",
        "properties": {"converted": {"type": "number"}},
    }
    assert catalog.required_scopes(delete) == {"mini:read", "mini:admin"}


def test_mcp_tools_list_result_is_a_catalog_named_by_the_caller() -> None:
    content = json.dumps(
        {
            "tools": [
                {
                    "name": "get_time",
                    "description": "Current time in a timezone.",
                    "inputSchema": {"type": "object", "properties": {}},
                    "annotations": {"readOnlyHint": True},
                    "outputSchema": {"type": "object"},
                    "_meta": {"capreg/required_scopes": ["time:read"]},
                }
            ],
            "_meta": {"capreg/default_scopes": ["base"], "capreg/version": "2"},
        }
    )
    catalog = parse_catalog(content, name="clock")
    (tool,) = catalog.tools
    assert (catalog.name, catalog.format, catalog.version) == ("clock", "mcp", "2")
    assert tool.annotations == {"readOnlyHint": True}
    assert catalog.required_scopes(tool) == {"base", "time:read"}


def test_mcp_tool_without_description_is_accepted() -> None:
    content = json.dumps({"tools": [{"name": "x", "inputSchema": {"type": "object"}}]})
    assert parse_catalog(content, name="bare").tools[0].description == ""


def test_mcp_catalog_without_a_name_is_rejected() -> None:
    content = json.dumps({"tools": [{"name": "x", "inputSchema": {"type": "object"}}]})
    assert "name: is required" in _problems(content)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "not valid JSON or YAML"),
        ("just text", "cannot tell the format"),
        (_native(capreg=2), "capreg: must be 1"),
        (_native(description=None), "description: is required"),
        (_native(name="Bad Name"), "name: 'Bad Name'"),
        (_native(name="a__b"), "must not contain '__'"),
        (_native(default_scopes=["has space"]), "default_scopes"),
        (_with_tool(name=""), "tools[0].name: is required"),
        (
            _with_tool(input_schema={"type": "array"}),
            "tools[0] 'get_weather_forecast'.input_schema",
        ),
        (_with_tool(input_schema=None), "input_schema: is required"),
        (
            _with_tool(input_schema={"type": "object", "properties": {"a": {"type": 5}}}),
            "is not a valid JSON Schema",
        ),
        (_with_tool(description="x" * 70_000), "must be at most 65536 characters"),
        (_with_tool(name="convert_currency"), "tool names must be unique"),
        (_with_tool(tags="weather"), "tags: must be a list of strings"),
        (_with_tool(required_scopes=["ok", "not ok"]), "'not ok' does not match"),
    ],
)
def test_bad_catalog_is_rejected_naming_entry_and_rule(content: str, fragment: str) -> None:
    assert fragment in _problems(content)


def test_every_problem_is_reported_at_once() -> None:
    document = yaml.safe_load(MINI)
    document["tools"][0]["input_schema"] = {"type": "string"}
    document["tools"][1]["description"] = 42
    message = _problems(yaml.safe_dump(document))
    assert "tools[0]" in message
    assert "tools[1]" in message


def test_requested_name_must_match_the_native_name() -> None:
    assert "names catalog 'mini' but 'other' was requested" in _problems(MINI, name="other")


def test_unknown_format_is_rejected() -> None:
    assert "format 'csv'" in _problems(MINI, fmt="csv")


def test_sample_catalogs_are_valid_and_cover_the_domains() -> None:
    files = catalog_files(CATALOGS)
    catalogs = [parse_catalog(p.read_text(), name=request_name(p, p.read_text())) for p in files]
    assert len(catalogs) >= 8
    assert sum(len(c.tools) for c in catalogs) >= 250
    assert sum(c.format == "mcp" for c in catalogs) >= 2
    assert all(c.default_scopes for c in catalogs)
    assert all(any(t.scopes for t in c.tools) for c in catalogs)


def test_request_name_uses_the_file_stem_only_for_mcp_files(tmp_path: Path) -> None:
    mcp = tmp_path / "clock.json"
    mcp.write_text(json.dumps({"tools": []}))
    assert request_name(mcp, mcp.read_text()) == "clock"
    assert request_name(DATA / "mini.yaml", MINI) == ""


@pytest.mark.parametrize("name", ["mini\n", "mini\r\n", "\nmini"])
def test_a_name_with_a_trailing_or_leading_newline_is_refused(name: str) -> None:
    assert "name" in _problems(_native(name=name))
    assert "name" in _problems(_native(), name=name)


@pytest.mark.parametrize(
    "hidden",
    ["\u202e", "\u2066", "\u200f", "\u2028", "\u2029", "\u200b", "\x85", "\ufeff"],
)
def test_a_tool_name_with_bidi_invisible_or_line_separator_characters_is_refused(
    hidden: str,
) -> None:
    # Such a name reads differently to a reviewer, a terminal and a model: "add\u202egnp.exe"
    # shows as "addexe.png".
    problems = _problems(
        json.dumps({"tools": [{"name": f"add{hidden}x", "inputSchema": {"type": "object"}}]}),
        name="c",
    )
    assert "name" in problems
    assert "must not contain" in problems


def test_a_scope_with_a_trailing_newline_is_refused() -> None:
    assert "default_scopes" in _problems(_native(default_scopes=["mini:read\n"]))
    assert "required_scopes" in _problems(_with_tool(required_scopes=["mini:write\n"]))
