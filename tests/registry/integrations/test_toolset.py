"""The shared part of both adapters, and the SDK check the other tests rely on."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from anthropic.types import ToolReferenceBlockParam, ToolResultBlockParam
from openai.types.responses import FunctionToolParam

from registry.integrations.toolset import (
    NO_MATCH,
    WEAK_MATCH,
    LoadedTool,
    Toolset,
    found,
    query_of,
)
from registry.proto import registry_pb2 as pb
from tests.registry.integrations.conformance import conforms


def loaded(tool_id: str) -> LoadedTool:
    catalog, name = tool_id.split("/")
    return LoadedTool(
        id=tool_id,
        function_name=f"{catalog}__{name}",
        description=f"{name} in {catalog}",
        input_schema={"type": "object"},
        output_schema=None,
    )


def reply(*ids: str, weak: bool = False) -> pb.SearchResponse:
    return pb.SearchResponse(hits=[pb.SearchHit(id=i) for i in ids], weak_match=weak)


@pytest.mark.parametrize(
    ("sdk_type", "payload"),
    [
        (ToolReferenceBlockParam, {"type": "tool_reference", "tool_name": "a__b", "x": 1}),
        (
            ToolResultBlockParam,
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [{"type": "tool_reference", "tool_name": "a__b", "toolname": "a"}],
            },
        ),
        (
            FunctionToolParam,
            {"type": "function", "name": "a__b", "parameters": {}, "strict": False, "defer": True},
        ),
    ],
)
def test_the_sdk_check_fails_on_a_key_the_sdk_type_does_not_declare(
    sdk_type: Any, payload: dict[str, Any]
) -> None:
    with pytest.raises(AssertionError):
        conforms(sdk_type, payload)


def test_the_sdk_check_fails_on_a_block_the_sdk_type_does_not_know() -> None:
    block = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_ref"}]}
    with pytest.raises(pydantic.ValidationError):
        conforms(ToolResultBlockParam, block)


def test_hits_are_offered_in_the_registrys_order_and_only_once_loaded() -> None:
    toolset = Toolset([loaded("hr/get_employee"), loaded("support/create_ticket")])
    outcome = found(toolset, reply("support/create_ticket", "crm/get_account", "hr/get_employee"))
    assert [tool.id for tool in outcome.tools] == ["support/create_ticket", "hr/get_employee"]
    assert outcome.note == ""
    assert not outcome.refused


def test_a_weak_match_keeps_its_hits_and_adds_the_note() -> None:
    toolset = Toolset([loaded("hr/get_employee")])
    outcome = found(toolset, reply("hr/get_employee", weak=True))
    assert [tool.id for tool in outcome.tools] == ["hr/get_employee"]
    assert outcome.note == WEAK_MATCH


@pytest.mark.parametrize("weak", [False, True])
def test_no_loaded_hit_is_no_match_whatever_the_registry_judged(weak: bool) -> None:
    outcome = found(Toolset(), reply(weak=weak))
    assert outcome.tools == ()
    assert outcome.note == NO_MATCH


def test_a_toolset_maps_function_names_back_to_ids_and_keeps_load_order() -> None:
    toolset = Toolset([loaded("support/create_ticket")])
    toolset.add([loaded("hr/get_employee"), loaded("support/create_ticket")])
    assert [tool.id for tool in toolset.tools] == ["support/create_ticket", "hr/get_employee"]
    assert toolset.capreg_id("hr__get_employee") == "hr/get_employee"
    assert toolset.capreg_id("hr/get_employee") is None  # ids are not names
    assert toolset.missing(["hr/get_employee", "crm/get_account", "crm/get_account"]) == [
        "crm/get_account"
    ]


@pytest.mark.parametrize(
    ("arguments", "query"),
    [
        ({"query": "  open a ticket "}, "open a ticket"),
        ('{"query": "open a ticket"}', "open a ticket"),
        ({"query": 7}, ""),
        ({}, ""),
        (None, ""),
        ("[1, 2]", ""),
        ("{", ""),
    ],
)
def test_the_query_is_read_from_an_object_or_its_json_text(arguments: object, query: str) -> None:
    assert query_of(arguments) == query
