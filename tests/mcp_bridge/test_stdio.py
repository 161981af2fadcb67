"""`capreg bridge` as a real stdio subprocess, driven by the MCP SDK's stdio client."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from registry.config import ServerConfig
from registry.core import Registry
from tests.conftest import ROOT, self_signed_certificate, start_server
from tests.mcp_bridge.conftest import SecuredRegistry, payload


def bridge_command(address: str, key: str | None, *options: str) -> StdioServerParameters:
    # Only these variables are added to the SDK's minimal default environment, so a
    # CAPREG_API_KEY or CAPREG_SERVER in the developer's shell cannot leak into the test.
    env = {"CAPREG_API_KEY": key} if key else {}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "capreg.cli", "bridge", "--registry", address, *options],
        env=env,
        cwd=ROOT,
    )


async def test_a_stdio_bridge_lists_searches_and_fetches_schemas_with_its_key(
    secured_registry: SecuredRegistry,
) -> None:
    command = bridge_command(secured_registry.address, secured_registry.support_key)
    async with Client(command) as client:
        listed = await client.list_tools()
        found = await client.call_tool("search_tools", {"query": "refund a customer's order"})
        hits = payload(found)["hits"]
        fetched = await client.call_tool("get_tool_schema", {"ids": [hits[0]["id"]]})
        unknown = await client.call_tool("get_tool_schema", {"ids": ["support/create_tiket"]})
    assert {tool.name for tool in listed.tools} == {
        "search_tools",
        "get_tool_schema",
        "list_catalogs",
    }
    # The key is the support agent's: every hit is from the support catalog.
    assert hits
    assert all(hit["id"].startswith("support/") for hit in hits)
    [tool] = payload(fetched)["tools"]
    assert tool["id"] == hits[0]["id"]
    assert tool["function"]["parameters"]["type"] == "object"
    assert unknown.is_error
    assert payload(unknown)["suggestions"]["support/create_tiket"][0] == "support/create_ticket"


async def test_a_stdio_bridge_without_a_key_for_a_secured_registry_is_refused(
    secured_registry: SecuredRegistry,
) -> None:
    async with Client(bridge_command(secured_registry.address, None)) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("search_tools", {"query": "payroll"})
    assert "credentials" in caught.value.message


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
async def test_a_stdio_bridge_reaches_a_tls_registry_it_trusts_through_ca_file(
    sample_registry: Registry, tmp_path: Path
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    config = ServerConfig(listen="127.0.0.1:0", tls_cert=cert, tls_key=key)
    server, address = await start_server(sample_registry, config)
    try:
        async with Client(bridge_command(address, None, "--ca-file", str(cert))) as client:
            listed = await client.call_tool("list_catalogs", {})
    finally:
        await server.stop(None)
    assert len(payload(listed)["catalogs"]) == 9
