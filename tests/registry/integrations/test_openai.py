"""The OpenAI adapter against a real registry: every item is what the official SDK's types
accept, and each search loads exactly the hits' function definitions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from openai.types.responses import (
    EasyInputMessageParam,
    FunctionTool,
    FunctionToolParam,
    ResponseInputItemParam,
    ResponseToolSearchCall,
    ResponseToolSearchOutputItemParam,
    ResponseToolSearchOutputItemParamParam,
    ToolParam,
    ToolSearchTool,
    ToolSearchToolParam,
)

from registry.client import AsyncRegistryClient, RegistryClient, RegistryTarget
from registry.integrations.openai import InputItem, OpenAIToolSearch, ToolSearchOutput
from registry.integrations.toolset import FIX_QUERY, NO_MATCH, WEAK_MATCH
from tests.registry.integrations.conformance import conforms
from tests.registry.integrations.conftest import ScopedRegistry

TICKET = "open a support ticket for a customer"
# Nothing in the sample catalogs bakes bread: the registry flags the answer as weak.
OFF_TOPIC = "bake a chocolate cake"


def search_call(arguments: object, call_id: str = "call_01") -> ResponseToolSearchCall:
    """The model's search item, parsed by the SDK as it parses a real response."""
    return ResponseToolSearchCall.model_validate(
        {
            "type": "tool_search_call",
            "id": "tsc_01",
            "call_id": call_id,
            "execution": "client",
            "status": "completed",
            "arguments": arguments,
        }
    )


def assert_valid(search: OpenAIToolSearch, items: list[InputItem]) -> None:
    """The items and the tools are what the Responses API's types accept."""
    for item in items:
        conforms(ResponseInputItemParam, item)
        if item["type"] == "tool_search_output":
            conforms(ResponseToolSearchOutputItemParamParam, item)
            ResponseToolSearchOutputItemParam.model_validate(item)
            for tool in item["tools"]:
                conforms(FunctionToolParam, tool)
                FunctionTool.model_validate(tool)
        else:
            conforms(EasyInputMessageParam, item)
    for search_tool in search.tools():
        conforms(ToolSearchToolParam, search_tool)
        conforms(ToolParam, search_tool)
        ToolSearchTool.model_validate(search_tool)


def output_of(items: list[InputItem]) -> ToolSearchOutput:
    first = items[0]
    assert first["type"] == "tool_search_output"
    return first


def notes(items: list[InputItem]) -> list[Any]:
    return [item["content"] for item in items if item["type"] == "message"]


async def test_a_search_loads_exactly_the_hits_definitions(registry_address: str) -> None:
    search = OpenAIToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        items = await asyncio.to_thread(search.handle, client, search_call({"query": TICKET}))
        reply = await asyncio.to_thread(client.search, TICKET)
        hit_ids = [hit.id for hit in reply.hits]
        schemas = (await asyncio.to_thread(client.get_schema, hit_ids)).tools

    assert_valid(search, items)
    output = output_of(items)
    assert output["call_id"] == "call_01"
    assert output["execution"] == "client"
    assert notes(items) == []
    assert hit_ids
    assert [tool["name"] for tool in output["tools"]] == [s.function_name for s in schemas]
    assert output["tools"] == search.deferred_tools()
    for tool, schema in zip(output["tools"], schemas, strict=True):
        assert tool["defer_loading"] is True
        assert tool["description"] == schema.description
        assert search.capreg_id(tool["name"]) == schema.id


async def test_the_request_carries_only_the_client_search_tool(registry_address: str) -> None:
    search = OpenAIToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        await asyncio.to_thread(search.handle, client, search_call({"query": TICKET}))

    [tool] = search.tools()
    assert tool["type"] == "tool_search"
    assert tool["execution"] == "client"
    assert tool["parameters"]["required"] == ["query"]
    assert search.deferred_tools()  # loaded, and sent in tool_search_output only


async def test_a_read_only_key_never_loads_a_tool_it_may_not_see(
    scoped_registry: ScopedRegistry,
) -> None:
    reader = RegistryTarget(address=scoped_registry.address, api_key=scoped_registry.read_only_key)
    search = OpenAIToolSearch(limit=20)
    with RegistryClient(reader) as client:
        items = await asyncio.to_thread(search.handle, client, search_call({"query": TICKET}))
        loaded = [search.capreg_id(tool["name"]) for tool in output_of(items)["tools"]]
        visible = await asyncio.to_thread(client.get_schema, [i for i in loaded if i])

    assert_valid(search, items)
    assert loaded
    assert None not in loaded
    assert [tool.id for tool in visible.tools] == loaded
    assert "support/create_ticket" not in loaded


async def test_a_weak_match_loads_the_hits_and_says_so_in_words(registry_address: str) -> None:
    search = OpenAIToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        reply = await asyncio.to_thread(client.search, OFF_TOPIC)
        items = await asyncio.to_thread(search.handle, client, search_call({"query": OFF_TOPIC}))

    assert reply.weak_match
    assert reply.hits
    assert_valid(search, items)
    assert len(output_of(items)["tools"]) == len(reply.hits)
    assert notes(items) == [WEAK_MATCH]
    assert items[1]["type"] == "message"
    assert items[1]["role"] == "developer"


async def test_no_hit_answers_the_call_and_gives_the_way_forward(
    scoped_registry: ScopedRegistry,
) -> None:
    target = RegistryTarget(address=scoped_registry.address, api_key=scoped_registry.nothing_key)
    search = OpenAIToolSearch()
    with RegistryClient(target) as client:
        items = await asyncio.to_thread(search.handle, client, search_call({"query": TICKET}))

    assert_valid(search, items)
    assert output_of(items)["tools"] == []  # every call is answered, even with nothing
    assert notes(items) == [NO_MATCH]


@pytest.mark.parametrize("arguments", [{}, {"query": ""}, {"goal": TICKET}, "not json"])
async def test_a_search_without_a_query_gets_the_fix_in_words(
    registry_address: str, arguments: object
) -> None:
    search = OpenAIToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        items = await asyncio.to_thread(search.handle, client, search_call(arguments))

    assert_valid(search, items)
    assert output_of(items)["tools"] == []
    assert notes(items) == [FIX_QUERY]


async def test_arguments_as_json_text_are_read_like_an_object(registry_address: str) -> None:
    search = OpenAIToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        items = await asyncio.to_thread(
            search.handle, client, search_call('{"query": "open a support ticket"}')
        )

    assert output_of(items)["tools"]


async def test_the_async_client_answers_a_search_as_the_blocking_one_does(
    scoped_registry: ScopedRegistry,
) -> None:
    target = RegistryTarget(address=scoped_registry.address)
    key = scoped_registry.support_key
    call = search_call({"query": TICKET}).model_dump()
    async_search = OpenAIToolSearch()
    async with AsyncRegistryClient(target) as client:
        answer = await async_search.handle_async(client, call, key=key)
    blocking_search = OpenAIToolSearch()
    with RegistryClient(RegistryTarget(address=target.address, api_key=key)) as client:
        expected = await asyncio.to_thread(blocking_search.handle, client, call)

    assert answer == expected
    assert "support/create_ticket" in {
        async_search.capreg_id(tool["name"]) for tool in output_of(answer)["tools"]
    }


def test_only_a_client_search_call_counts_as_a_search() -> None:
    search = OpenAIToolSearch()
    assert search.is_search(search_call({"query": TICKET}))
    server_side = search_call({"query": TICKET}).model_dump() | {"execution": "server"}
    assert not search.is_search(server_side)
    assert not search.is_search({"type": "function_call", "name": "support__create_ticket"})


def test_a_limit_beyond_the_registrys_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        OpenAIToolSearch(limit=51)
