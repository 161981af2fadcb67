"""The bridge's side of the context accounting is the exact text the bridge sends."""

from __future__ import annotations

import asyncio
import json

from mcp_types import Tool

from mcp_bridge import payloads
from mcp_bridge.accounting import UNUSED_REGISTRY, BridgeExchanges
from registry.core import Registry
from registry.proto import registry_pb2 as pb
from registry.rpc.servicer import search_response, tool_schema
from tests.mcp_bridge.conftest import in_memory_bridge

QUERY = "refund a customer whose order arrived damaged"


async def _listed_over_the_wire() -> list[Tool]:
    async with in_memory_bridge(UNUSED_REGISTRY) as client:  # listing calls no registry
        return (await client.list_tools()).tools


def test_the_tools_list_is_the_bridges_own_tools_in_the_static_lists_form() -> None:
    counted = json.loads(BridgeExchanges().tools_list())
    listed = asyncio.run(_listed_over_the_wire())
    # The same form the static tools list is counted in: function definitions.
    assert counted == [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            },
        }
        for tool in listed
    ]
    names = {entry["function"]["name"] for entry in counted}
    assert names == {payloads.SEARCH_TOOLS, payloads.GET_TOOL_SCHEMA, payloads.LIST_CATALOGS}


async def test_a_search_exchange_is_its_arguments_and_the_answer_the_bridge_returns(
    sample_registry: Registry, registry_address: str
) -> None:
    reply = search_response(sample_registry.search(QUERY, 5))
    async with in_memory_bridge(registry_address) as client:
        answered = await client.call_tool("search_tools", {"query": QUERY, "limit": 5})
    [content] = answered.content
    assert content.type == "text"
    arguments, text = BridgeExchanges().search(QUERY, 5, reply).split("\n", 1)
    assert json.loads(arguments) == {"query": QUERY, "limit": 5}
    assert text == content.text


async def test_a_schema_exchange_is_its_arguments_and_the_answer_the_bridge_returns(
    sample_registry: Registry, registry_address: str
) -> None:
    ids = ["support/request_refund", "support/reply_to_customer"]
    reply = pb.GetSchemaResponse(tools=[tool_schema(e) for e in sample_registry.schemas(ids)])
    async with in_memory_bridge(registry_address) as client:
        answered = await client.call_tool("get_tool_schema", {"ids": ids})
    [content] = answered.content
    assert content.type == "text"
    arguments, text = BridgeExchanges().schemas(ids, reply).split("\n", 1)
    assert json.loads(arguments) == {"ids": ids}
    assert text == content.text
