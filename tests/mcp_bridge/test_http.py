"""`capreg bridge --http` as a real subprocess on loopback, driven over streamable HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.mcp_bridge.conftest import SecuredRegistry, http_bridge_process, payload

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
STREAMS = {"Accept": "application/json, text/event-stream"}


@asynccontextmanager
async def http_client(url: str, key: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30.0) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def test_two_http_clients_with_different_keys_see_different_tools(
    secured_registry: SecuredRegistry,
) -> None:
    query = {"query": "look up an employee's record or a customer's support ticket", "limit": 10}
    async with (
        http_bridge_process(secured_registry.address) as bridge,
        http_client(bridge.url, secured_registry.hr_key) as hr,
        http_client(bridge.url, secured_registry.support_key) as support,
    ):
        hr_listed = await hr.list_tools()
        hr_catalogs = payload(await hr.call_tool("list_catalogs", {}))["catalogs"]
        support_catalogs = payload(await support.call_tool("list_catalogs", {}))["catalogs"]
        hr_hits = payload(await hr.call_tool("search_tools", query))["hits"]
        support_hits = payload(await support.call_tool("search_tools", query))["hits"]
        # Each client's schema call works for its own hit and not for the other's.
        own = await support.call_tool("get_tool_schema", {"ids": [support_hits[0]["id"]]})
        other = await support.call_tool("get_tool_schema", {"ids": [hr_hits[0]["id"]]})
    assert {tool.name for tool in hr_listed.tools} == {
        "search_tools",
        "get_tool_schema",
        "list_catalogs",
    }
    assert [c["name"] for c in hr_catalogs] == ["hr"]
    assert [c["name"] for c in support_catalogs] == ["support"]
    assert hr_hits
    assert all(hit["id"].startswith("hr/") for hit in hr_hits)
    assert support_hits
    assert all(hit["id"].startswith("support/") for hit in support_hits)
    assert not own.is_error
    assert other.is_error


async def test_an_http_request_without_a_bearer_key_is_refused(
    secured_registry: SecuredRegistry,
) -> None:
    async with http_bridge_process(secured_registry.address) as bridge:
        async with httpx2.AsyncClient(timeout=30.0) as http:
            response = await http.post(
                bridge.url,
                json=INITIALIZE,
                headers=STREAMS,
            )
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        # The SDK's client cannot get past the refusal either (its task groups wrap the error).
        with pytest.raises(ExceptionGroup) as caught:
            async with http_client(bridge.url, None) as client:
                await client.list_tools()
        assert caught.group_contains(MCPError, depth=None)


async def test_a_session_is_not_opened_for_a_key_the_registry_refuses(
    secured_registry: SecuredRegistry,
) -> None:
    async with (
        http_bridge_process(secured_registry.address) as bridge,
        httpx2.AsyncClient(timeout=30.0) as http,
    ):
        forged = await http.post(
            bridge.url,
            json=INITIALIZE,
            headers={**STREAMS, "Authorization": "Bearer capreg_00000000_notakey"},
        )
        real = await http.post(
            bridge.url,
            json=INITIALIZE,
            headers={**STREAMS, "Authorization": f"Bearer {secured_registry.hr_key}"},
        )
    assert forged.status_code == 401
    assert "mcp-session-id" not in forged.headers
    assert real.status_code == 200
    assert real.headers["mcp-session-id"]


async def test_sessions_are_capped(secured_registry: SecuredRegistry) -> None:
    headers = {**STREAMS, "Authorization": f"Bearer {secured_registry.hr_key}"}
    async with (
        http_bridge_process(secured_registry.address, "--max-sessions", "2") as bridge,
        httpx2.AsyncClient(timeout=30.0) as http,
    ):
        opened = [await http.post(bridge.url, json=INITIALIZE, headers=headers) for _ in range(3)]
    assert [r.status_code == 200 for r in opened] == [True, True, False]


async def test_one_key_cannot_take_every_session(secured_registry: SecuredRegistry) -> None:
    hr = {**STREAMS, "Authorization": f"Bearer {secured_registry.hr_key}"}
    support = {**STREAMS, "Authorization": f"Bearer {secured_registry.support_key}"}
    options = ("--max-sessions", "3", "--max-sessions-per-key", "2")
    async with (
        http_bridge_process(secured_registry.address, *options) as bridge,
        httpx2.AsyncClient(timeout=30.0) as http,
    ):
        by_hr = [await http.post(bridge.url, json=INITIALIZE, headers=hr) for _ in range(3)]
        by_support = await http.post(bridge.url, json=INITIALIZE, headers=support)
        # A session its key ends gives the key its place back.
        ended = await http.delete(
            bridge.url, headers={**hr, "mcp-session-id": by_hr[0].headers["mcp-session-id"]}
        )
        reopened = await http.post(bridge.url, json=INITIALIZE, headers=hr)
    assert [r.status_code for r in by_hr] == [200, 200, 429]
    assert "mcp-session-id" not in by_hr[2].headers
    assert by_support.status_code == 200
    assert ended.status_code == 200
    assert reopened.status_code == 200
