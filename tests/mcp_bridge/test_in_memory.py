"""The bridge through the MCP SDK's in-memory client, against a real registry on loopback."""

from __future__ import annotations

import json

import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST

from tests.mcp_bridge.conftest import SecuredRegistry, in_memory_bridge, payload, silent_registry

TOOLS = {"search_tools", "get_tool_schema", "list_catalogs"}
TOOLS_LIST_TOKEN_BUDGET = 450


async def test_tools_list_has_exactly_the_three_discovery_tools(registry_address: str) -> None:
    async with in_memory_bridge(registry_address) as client:
        listed = await client.list_tools()
        resources = await client.list_resources()
        prompts = await client.list_prompts()
    assert {tool.name for tool in listed.tools} == TOOLS
    assert len(listed.tools) == len(TOOLS)
    assert not resources.resources
    assert not prompts.prompts
    for tool in listed.tools:
        assert tool.description
        assert len(tool.description.split()) >= 6  # says what it is for, tersely
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint


async def test_search_tools_asks_the_model_for_one_search_per_step(registry_address: str) -> None:
    # A task searched step by step finds far more of its tools in fewer hits (decision 0061);
    # the advertised description is the only place a client's model learns that.
    async with in_memory_bridge(registry_address) as client:
        listed = await client.list_tools()
    (search,) = [tool for tool in listed.tools if tool.name == "search_tools"]
    assert search.description is not None
    assert "once per step" in search.description


def o200k_tokens(text: str) -> int:
    import bpe_openai  # imported here so the warning filter below covers its import

    return len(bpe_openai.get_encoding("o200k_base").encode(text))


# bpe-openai 0.1.4 reads its bundled ranks with importlib.resources.open_binary, which
# Python 3.11 deprecates; the warning is the library's, not ours.
@pytest.mark.filterwarnings("ignore:open_binary is deprecated:DeprecationWarning")
async def test_tools_list_payload_fits_the_token_budget(registry_address: str) -> None:
    async with in_memory_bridge(registry_address) as client:
        listed = await client.list_tools()
    # What a client turns into tool definitions for the model: every tool as sent on the wire.
    wire = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = json.dumps({"tools": wire["tools"]}, ensure_ascii=False)
    tokens = o200k_tokens(text)
    print(f"\nbridge tools/list: {tokens} o200k tokens ({len(text)} characters)")
    assert tokens <= TOOLS_LIST_TOKEN_BUDGET


async def test_search_hits_name_the_ids_that_get_tool_schema_turns_into_definitions(
    registry_address: str,
) -> None:
    async with in_memory_bridge(registry_address) as client:
        found = await client.call_tool(
            "search_tools", {"query": "open a support ticket for a customer", "limit": 3}
        )
        answer = payload(found)
        hits = answer["hits"]
        assert not found.is_error
        assert len(hits) == 3
        best = hits[0]
        assert best["id"] == "support/create_ticket"
        assert set(best) == {"id", "name", "summary", "score"}
        assert "get_tool_schema" in answer["note"]

        fetched = await client.call_tool("get_tool_schema", {"ids": [best["id"]]})
    assert not fetched.is_error
    [tool] = payload(fetched)["tools"]
    assert tool["id"] == "support/create_ticket"
    function = tool["function"]
    assert set(function) == {"name", "description", "parameters"}
    assert function["name"] == "support__create_ticket"
    assert function["parameters"]["type"] == "object"
    assert "requester_email" in function["parameters"]["properties"]


async def test_a_search_nothing_fits_says_the_match_is_weak(registry_address: str) -> None:
    async with in_memory_bridge(registry_address) as client:
        found = await client.call_tool("search_tools", {"query": "launch a rocket to mars"})
    answer = payload(found)
    assert not found.is_error
    assert answer["weak_match"] is True
    assert "weak" in answer["note"].lower()


async def test_an_empty_query_is_an_error_result_saying_how_to_retry(
    registry_address: str,
) -> None:
    async with in_memory_bridge(registry_address) as client:
        found = await client.call_tool("search_tools", {"query": "   "})
    assert found.is_error
    answer = payload(found)
    assert "query" in answer["error"]
    assert "search_tools" in answer["fix"]


async def test_an_unknown_id_is_an_error_result_with_suggestions_and_the_corrected_call(
    registry_address: str,
) -> None:
    async with in_memory_bridge(registry_address) as client:
        fetched = await client.call_tool(
            "get_tool_schema", {"ids": ["hr/get_employe", "support/create_ticket"]}
        )
        assert fetched.is_error
        answer = payload(fetched)
        assert "hr/get_employee" in answer["suggestions"]["hr/get_employe"]
        [retry] = answer["next_calls"]
        assert retry == {
            "tool": "get_tool_schema",
            "arguments": {"ids": ["hr/get_employee", "support/create_ticket"]},
        }
        # The way forward works as given.
        retried = await client.call_tool(retry["tool"], retry["arguments"])
    assert not retried.is_error
    assert [t["id"] for t in payload(retried)["tools"]] == retry["arguments"]["ids"]


async def test_an_id_with_no_close_match_leads_to_a_search(registry_address: str) -> None:
    async with in_memory_bridge(registry_address) as client:
        fetched = await client.call_tool("get_tool_schema", {"ids": ["zzz/qqq_rrr"]})
    assert fetched.is_error
    assert payload(fetched)["next_calls"] == [
        {"tool": "search_tools", "arguments": {"query": "qqq rrr"}}
    ]


async def test_arguments_outside_the_advertised_schema_are_error_results(
    registry_address: str,
) -> None:
    async with in_memory_bridge(registry_address) as client:
        too_many = await client.call_tool("search_tools", {"query": "payroll", "limit": 51})
        no_ids = await client.call_tool("get_tool_schema", {"ids": []})
    assert too_many.is_error
    assert no_ids.is_error


async def test_list_catalogs_shows_each_catalog_with_its_tool_count(registry_address: str) -> None:
    async with in_memory_bridge(registry_address) as client:
        listed = await client.call_tool("list_catalogs", {})
    catalogs = {c["name"]: c for c in payload(listed)["catalogs"]}
    assert {"hr", "support", "finance"} <= set(catalogs)
    assert catalogs["support"]["tools"] > 0
    assert catalogs["support"]["title"]


async def test_an_unreachable_registry_is_a_protocol_error_without_internals(
    unused_tcp_port: int,
) -> None:
    address = f"127.0.0.1:{unused_tcp_port}"
    async with in_memory_bridge(address) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("search_tools", {"query": "open a support ticket"})
    assert caught.value.code == INTERNAL_ERROR
    message = caught.value.message
    assert "unavailable" in message
    assert str(unused_tcp_port) not in message
    assert "ipv4" not in message.lower()


async def test_a_registry_that_misses_the_deadline_is_a_protocol_error() -> None:
    async with silent_registry() as address, in_memory_bridge(address, timeout=0.5) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("list_catalogs", {})
    assert caught.value.code == INTERNAL_ERROR
    assert "in time" in caught.value.message
    assert "Deadline" not in caught.value.message


async def test_the_stdio_key_decides_what_the_agent_sees(secured_registry: SecuredRegistry) -> None:
    async with in_memory_bridge(secured_registry.address, key=secured_registry.hr_key) as client:
        listed = await client.call_tool("list_catalogs", {})
        found = await client.call_tool("search_tools", {"query": "open a support ticket"})
        hidden = await client.call_tool("get_tool_schema", {"ids": ["support/create_ticket"]})
    assert [c["name"] for c in payload(listed)["catalogs"]] == ["hr"]
    assert all(hit["id"].startswith("hr/") for hit in payload(found)["hits"])
    # Out of scope reads exactly like unknown: an error result, not a protocol error.
    assert hidden.is_error


async def test_a_missing_or_unknown_key_is_a_protocol_error(
    secured_registry: SecuredRegistry,
) -> None:
    for key in (None, secured_registry.hr_key[:-4] + "AAAA"):
        async with in_memory_bridge(secured_registry.address, key=key) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("list_catalogs", {})
        assert caught.value.code == INVALID_REQUEST
        assert key is None or key not in caught.value.message
