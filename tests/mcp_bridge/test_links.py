"""Links in the bridge's get_tool_schema results: compact, and only to tools the key sees."""

from __future__ import annotations

from tests.mcp_bridge.conftest import SecuredRegistry, in_memory_bridge, payload


async def test_a_schema_lists_its_links_compactly(secured_registry: SecuredRegistry) -> None:
    key = secured_registry.support_key
    async with in_memory_bridge(secured_registry.address, key=key) as client:
        fetched = await client.call_tool("get_tool_schema", {"ids": ["support/create_ticket"]})
    [tool] = payload(fetched)["tools"]
    links = tool["links"]
    assert links[0] == {
        "id": "support/get_ticket",
        "rel": "read",
        "arguments": {"ticket_id": "$.ticket_id"},
    }
    # Derived links too, with only what the model needs: no arguments key when none apply.
    assert {"id": "support/search_tickets", "rel": "collection"} in links
    assert all(set(link) <= {"id", "rel", "arguments"} for link in links)


async def test_a_link_into_a_catalog_the_key_cannot_see_is_absent(
    secured_registry: SecuredRegistry, registry_address: str
) -> None:
    ids = {"ids": ["support/get_customer_profile"]}
    async with in_memory_bridge(registry_address) as client:
        everything = await client.call_tool("get_tool_schema", ids)
    key = secured_registry.support_key
    async with in_memory_bridge(secured_registry.address, key=key) as client:
        scoped = await client.call_tool("get_tool_schema", ids)
    # Its one link, declared, goes to the CRM catalog, which a support key may not see.
    [open_tool] = payload(everything)["tools"]
    assert [link["id"] for link in open_tool["links"]] == ["crm/search_accounts"]
    [tool] = payload(scoped)["tools"]
    assert "links" not in tool
