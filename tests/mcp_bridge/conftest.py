"""Bridge fixtures: real registry servers on loopback, open and with API keys and scopes."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from mcp_bridge.payloads import render
from mcp_bridge.server import build_server, static_key
from registry.auth.keys import KeyStore, add_key
from registry.client import AsyncRegistryClient, RegistryTarget
from registry.core import Registry
from tests.conftest import ROOT, start_server

# Generous bounds for a cold subprocess (it imports grpc, the MCP SDK and uvicorn).
STARTUP_SECONDS = 60.0
SHUTDOWN_SECONDS = 15.0


@dataclass(frozen=True)
class SecuredRegistry:
    address: str
    hr_key: str  # hr:* (the HR catalog only)
    support_key: str  # support:read, support:write (the support catalog only)


@pytest.fixture
async def registry_address(sample_registry: Registry) -> AsyncIterator[str]:
    """A real registry over the sample catalogs, without keys (every caller sees all)."""
    server, address = await start_server(sample_registry)
    yield address
    await server.stop(None)


@pytest.fixture
async def secured_registry(
    sample_registry: Registry, tmp_path: Path
) -> AsyncIterator[SecuredRegistry]:
    """A real registry enforcing API keys: two agents with disjoint scopes."""
    keys_file = tmp_path / "keys.yaml"
    hr = add_key(keys_file, "hr-agent", ["hr:*"])
    support = add_key(keys_file, "support-agent", ["support:read", "support:write"])
    server, address = await start_server(sample_registry, keys=KeyStore.load(keys_file))
    yield SecuredRegistry(address, hr, support)
    await server.stop(None)


@asynccontextmanager
async def in_memory_bridge(
    address: str, *, key: str | None = None, timeout: float = 10.0
) -> AsyncIterator[Client]:
    """The bridge in this process, reached through the SDK's in-memory client.

    A context manager, not a fixture: the SDK's task groups must be entered and left by the
    same task, and pytest-asyncio runs fixture setup and teardown as separate tasks.
    """
    target = RegistryTarget(address=address, timeout=timeout)
    async with (
        AsyncRegistryClient(target) as registry,
        Client(build_server(registry, static_key(key))) as client,
    ):
        yield client


@asynccontextmanager
async def silent_registry() -> AsyncIterator[str]:
    """A TCP listener that accepts connections and never answers.

    Reason for the fake: a real registry answers too fast for a deadline to expire reliably;
    this one leaves every call waiting until the bridge's deadline ends it.
    """

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # until the bridge hangs up
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"127.0.0.1:{port}"


def payload(result: CallToolResult) -> dict[str, Any]:
    """The structured payload of a tool result (its text content says the same, compactly)."""
    assert isinstance(result.structured_content, dict)
    [text] = result.content
    assert isinstance(text, TextContent)
    assert text.text == render(result.structured_content)
    return result.structured_content


@dataclass(frozen=True)
class HttpBridge:
    url: str
    process: asyncio.subprocess.Process


@asynccontextmanager
async def http_bridge_process(address: str, *options: str) -> AsyncIterator[HttpBridge]:
    """`capreg bridge --http 127.0.0.1:0` as a real subprocess; yields once it has bound."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "capreg.cli",
        "bridge",
        "--registry",
        address,
        "--http",
        "127.0.0.1:0",
        *options,
        cwd=ROOT,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    stderr = process.stderr
    seen: list[str] = []

    async def bound_url() -> str:
        while line := (await stderr.readline()).decode():
            seen.append(line)
            if found := re.search(r"streamable HTTP at (http://\S+)", line):
                return found.group(1)
        raise AssertionError(f"bridge exited before binding: {''.join(seen)}")

    async def drain() -> None:
        # Keep reading so a chatty bridge can never block on a full pipe.
        while line := await stderr.readline():
            seen.append(line.decode())

    drainer: asyncio.Task[None] | None = None
    try:
        url = await asyncio.wait_for(bound_url(), STARTUP_SECONDS)
        drainer = asyncio.create_task(drain())
        yield HttpBridge(url, process)
    finally:
        if process.returncode is None:
            process.terminate()
        try:
            await asyncio.wait_for(process.wait(), SHUTDOWN_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()
        if drainer is not None:
            await drainer
