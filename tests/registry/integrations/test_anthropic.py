"""The Anthropic adapter against a real registry: every payload is what the official SDK's
types accept, and each search refers Claude to exactly the deferred tools it was sent."""

from __future__ import annotations

import asyncio
import re

import pytest
from anthropic.types import (
    MessageParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUnionParam,
    ToolUseBlock,
)

from registry.client import AsyncRegistryClient, NotFound, RegistryClient, RegistryTarget
from registry.integrations.anthropic import (
    SEARCH_TOOL_NAME,
    AnthropicToolSearch,
    ToolResultBlock,
)
from registry.integrations.toolset import FIX_QUERY, NO_MATCH, WEAK_MATCH, load_toolset
from registry.wire import MAX_QUERY_CHARS
from tests.registry.integrations.conformance import conforms
from tests.registry.integrations.conftest import ScopedRegistry

FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
TICKET = "open a support ticket for a customer"
# Nothing in the sample catalogs bakes bread: the registry flags the answer as weak.
OFF_TOPIC = "bake a chocolate cake"


def tool_use(query: object, use_id: str = "toolu_01") -> ToolUseBlock:
    """Claude's call of the search tool, parsed by the SDK as it parses a real answer."""
    return ToolUseBlock.model_validate(
        {"type": "tool_use", "id": use_id, "name": SEARCH_TOOL_NAME, "input": {"query": query}}
    )


def references(block: ToolResultBlock) -> list[str]:
    return [b["tool_name"] for b in block["content"] if b["type"] == "tool_reference"]


def texts(block: ToolResultBlock) -> list[str]:
    return [b["text"] for b in block["content"] if b["type"] == "text"]


def assert_valid(search: AnthropicToolSearch, block: ToolResultBlock) -> None:
    """The block and the tools that go with it are what the Messages API's types accept."""
    conforms(ToolResultBlockParam, block)
    conforms(MessageParam, {"role": "user", "content": [block]})
    for tool in search.tools():
        conforms(ToolParam, tool)
        conforms(ToolUnionParam, tool)


async def test_a_search_refers_claude_to_exactly_the_deferred_definitions(
    registry_address: str,
) -> None:
    search = AnthropicToolSearch()
    assert search.tools() == [search.search_tool()]
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        block = await asyncio.to_thread(search.handle, client, tool_use(TICKET))
        reply = await asyncio.to_thread(client.search, TICKET)
        hit_ids = [hit.id for hit in reply.hits]
        schemas = (await asyncio.to_thread(client.get_schema, hit_ids)).tools

    assert_valid(search, block)
    assert block["tool_use_id"] == "toolu_01"
    assert "is_error" not in block
    assert texts(block) == []
    assert hit_ids, "the sample catalogs answer a ticket request"
    # One reference per hit, in the registry's order, each naming a definition that is sent
    # deferred, and nothing else is sent deferred.
    assert references(block) == [schema.function_name for schema in schemas]
    deferred = search.deferred_tools()
    assert [tool["name"] for tool in deferred] == references(block)
    assert all(tool["defer_loading"] is True for tool in deferred)
    assert [search.capreg_id(name) for name in references(block)] == hit_ids


async def test_every_deferred_definition_is_named_by_function_name_with_its_schema(
    registry_address: str,
) -> None:
    ids = ["support/create_ticket", "hr/get_employee", "crm/get_account"]
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        toolset = await asyncio.to_thread(load_toolset, client, ids)
        schemas = (await asyncio.to_thread(client.get_schema, ids)).tools
    search = AnthropicToolSearch(toolset=toolset)

    [search_tool, *deferred] = search.tools()
    assert search_tool["name"] == SEARCH_TOOL_NAME
    assert "defer_loading" not in search_tool  # the one tool Claude sees from the start
    for tool, schema in zip(deferred, schemas, strict=True):
        conforms(ToolParam, tool)
        assert FUNCTION_NAME.fullmatch(tool["name"])
        assert tool["name"] == schema.function_name
        assert tool["description"] == schema.description
        assert tool["input_schema"]["type"] == "object"
        assert search.capreg_id(tool["name"]) == schema.id


async def test_preloaded_tools_are_referred_to_without_being_sent_twice(
    registry_address: str,
) -> None:
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        toolset = await asyncio.to_thread(load_toolset, client, ["support/create_ticket"])
        search = AnthropicToolSearch(toolset=toolset)
        block = await asyncio.to_thread(search.handle, client, tool_use(TICKET))

    names = [tool["name"] for tool in search.deferred_tools()]
    assert len(names) == len(set(names))
    assert set(references(block)) <= set(names)
    assert "support/create_ticket" in {search.capreg_id(name) for name in references(block)}


async def test_a_read_only_key_is_never_referred_to_a_tool_it_may_not_see(
    scoped_registry: ScopedRegistry,
) -> None:
    address = scoped_registry.address
    reader = RegistryTarget(address=address, api_key=scoped_registry.read_only_key)
    writer = RegistryTarget(address=address, api_key=scoped_registry.support_key)
    with RegistryClient(reader) as client:
        search = AnthropicToolSearch(limit=20)
        block = await asyncio.to_thread(search.handle, client, tool_use(TICKET))
        referred = [search.capreg_id(name) for name in references(block)]
        # Everything referred to is something this key may fetch.
        visible = await asyncio.to_thread(client.get_schema, [i for i in referred if i])
    with RegistryClient(writer) as client:
        writer_search = AnthropicToolSearch(limit=20)
        writer_block = await asyncio.to_thread(writer_search.handle, client, tool_use(TICKET))
        writer_referred = {writer_search.capreg_id(n) for n in references(writer_block)}

    assert_valid(search, block)
    assert referred
    assert None not in referred
    assert [tool.id for tool in visible.tools] == referred
    assert {tool.catalog for tool in visible.tools} <= {"support", "crm"}
    assert "support/create_ticket" not in referred  # needs support:write
    assert "support/create_ticket" in writer_referred  # found for a key that may see it


async def test_a_tool_the_key_may_not_see_cannot_be_preloaded(
    scoped_registry: ScopedRegistry,
) -> None:
    target = RegistryTarget(address=scoped_registry.address, api_key=scoped_registry.read_only_key)
    with RegistryClient(target) as client, pytest.raises(NotFound):
        await asyncio.to_thread(load_toolset, client, ["support/create_ticket"])


async def test_a_weak_match_says_so_in_words_before_the_references(registry_address: str) -> None:
    search = AnthropicToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        reply = await asyncio.to_thread(client.search, OFF_TOPIC)
        block = await asyncio.to_thread(search.handle, client, tool_use(OFF_TOPIC))

    assert reply.weak_match
    assert reply.hits
    assert_valid(search, block)
    assert block["content"][0] == {"type": "text", "text": WEAK_MATCH}
    assert len(references(block)) == len(reply.hits)
    assert "is_error" not in block


async def test_no_hit_gives_only_the_way_forward_in_words(
    scoped_registry: ScopedRegistry,
) -> None:
    target = RegistryTarget(address=scoped_registry.address, api_key=scoped_registry.nothing_key)
    search = AnthropicToolSearch()
    with RegistryClient(target) as client:
        block = await asyncio.to_thread(search.handle, client, tool_use(TICKET))

    assert_valid(search, block)
    assert block["content"] == [{"type": "text", "text": NO_MATCH}]
    assert search.deferred_tools() == []


@pytest.mark.parametrize("query", [None, "", "   ", 42])
async def test_a_search_without_a_query_is_an_error_claude_can_fix(
    registry_address: str, query: object
) -> None:
    search = AnthropicToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        block = await asyncio.to_thread(search.handle, client, tool_use(query))

    assert_valid(search, block)
    assert block["is_error"] is True
    assert block["content"] == [{"type": "text", "text": FIX_QUERY}]


async def test_a_query_the_registry_refuses_comes_back_with_its_rule(registry_address: str) -> None:
    search = AnthropicToolSearch()
    with RegistryClient(RegistryTarget(address=registry_address)) as client:
        block = await asyncio.to_thread(
            search.handle, client, tool_use("x" * (MAX_QUERY_CHARS + 1))
        )

    assert_valid(search, block)
    assert block["is_error"] is True
    [text] = texts(block)
    assert str(MAX_QUERY_CHARS) in text.replace(",", "")
    assert text.endswith(FIX_QUERY)


async def test_the_async_client_answers_a_search_as_the_blocking_one_does(
    scoped_registry: ScopedRegistry,
) -> None:
    target = RegistryTarget(address=scoped_registry.address)
    key = scoped_registry.read_only_key
    use = {
        "type": "tool_use",
        "id": "toolu_02",
        "name": SEARCH_TOOL_NAME,
        "input": {"query": TICKET},
    }
    async_search = AnthropicToolSearch()
    async with AsyncRegistryClient(target) as client:
        answer = await async_search.handle_async(client, use, key=key)
    blocking_search = AnthropicToolSearch()
    with RegistryClient(RegistryTarget(address=target.address, api_key=key)) as client:
        expected = await asyncio.to_thread(blocking_search.handle, client, use)

    assert answer == expected
    assert async_search.tools() == blocking_search.tools()


def test_only_the_search_tool_counts_as_a_search() -> None:
    search = AnthropicToolSearch()
    assert search.is_search(tool_use(TICKET))
    assert not search.is_search({"type": "tool_use", "id": "t", "name": "support__create_ticket"})


@pytest.mark.parametrize(("name", "limit"), [("search__tools", 0), (SEARCH_TOOL_NAME, 51)])
def test_a_search_that_could_shadow_a_tool_or_overreach_the_registry_is_refused(
    name: str, limit: int
) -> None:
    with pytest.raises(ValueError, match=r"name|limit"):
        AnthropicToolSearch(name=name, limit=limit)
