"""`capreg import-mcp`: a live MCP server's tools/list, every page, registered as a catalog."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
import uvicorn
from mcp.server import MCPServer, Server, ServerRequestContext
from starlette.types import ASGIApp

from registry.core import Registry
from registry.ingest.mcp_import import ImportFailed, McpSource, list_source_tools, list_tools
from tests.conftest import CountingEmbedder, start_server

CAPREG = [sys.executable, "-m", "capreg.cli"]
# The real third-party server from PyPI (a dev dependency), started as a subprocess.
TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "Europe/Paris"]
PAGES = [["alpha", "beta"], ["gamma"], ["delta", "epsilon"]]


async def _capreg(*args: str) -> subprocess.CompletedProcess[str]:
    # In a thread: the registry server answering the command runs on this event loop.
    return await asyncio.to_thread(
        subprocess.run, [*CAPREG, *args], capture_output=True, text=True, timeout=180
    )


async def test_import_mcp_registers_a_real_servers_tools_and_reimports_as_a_no_op(
    empty_registry: Registry, embedder: CountingEmbedder
) -> None:
    server, address = await start_server(empty_registry)
    try:
        first = await _capreg("import-mcp", "time", "--server", address, "--", *TIME_SERVER)
        assert first.returncode == 0, first.stderr
        assert first.stdout.startswith("time: 2 tools from ")
        assert "2 added, 0 updated, 0 removed, 0 unchanged (revision 1, 2 embedded)" in (
            first.stdout
        )
        (clock,) = empty_registry.schemas(["time/get_current_time"])
        assert clock.tool.annotations["readOnlyHint"] is True
        assert clock.tool.output_schema is not None
        assert "timezone" in clock.tool.input_schema["properties"]
        (summary,) = empty_registry.catalogs()
        assert (summary.title, summary.version) == ("mcp-time", "2026.10.19")
        embedded = embedder.texts

        again = await _capreg("import-mcp", "--server", address, "time", "--", *TIME_SERVER)
        assert again.returncode == 0, again.stderr
        assert "0 added, 0 updated, 0 removed, 2 unchanged (revision 1, 0 embedded)" in (
            again.stdout
        )
        assert embedder.texts == embedded
    finally:
        await server.stop(None)


async def test_import_mcp_reports_a_server_that_cannot_start_in_one_line() -> None:
    result = await _capreg("import-mcp", "ghost", "--", "/nonexistent/mcp-server")
    assert result.returncode == 1
    assert result.stderr.startswith(
        "capreg: import-mcp /nonexistent/mcp-server: cannot start or reach the MCP server"
    )
    assert len(result.stderr.strip().splitlines()) == 1


async def test_import_mcp_needs_a_command_or_a_url() -> None:
    result = await _capreg("import-mcp", "nothing")
    assert result.returncode == 1
    assert "either the server's command after '--' or --http URL" in result.stderr


def _paged_server(pages: list[list[str]], *, cursors: list[str] | None = None) -> Server[Any]:
    """A server that lists its tools over several pages, as large servers do."""
    names = cursors or [str(i) for i in range(1, len(pages))]

    async def list_page(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params else None
        index = 0 if cursor is None else names.index(cursor) + 1
        tools = [
            types.Tool(name=n, description=f"The {n} tool.", input_schema={"type": "object"})
            for n in pages[index]
        ]
        following = names[index] if index < len(names) else None
        return types.ListToolsResult(tools=tools, next_cursor=following)

    return Server("paged", version="1.0", on_list_tools=list_page)


async def test_every_page_of_tools_list_is_followed() -> None:
    document = await list_tools(_paged_server(PAGES))
    assert [t["name"] for t in document["tools"]] == [n for page in PAGES for n in page]
    assert document["tools"][0]["inputSchema"] == {"type": "object"}
    assert document["_meta"] == {"capreg/title": "paged", "capreg/version": "1.0"}


async def test_a_server_whose_cursor_repeats_is_refused() -> None:
    looping = _paged_server([["a"], ["b"], ["c"]], cursors=["again", "again"])
    with pytest.raises(ImportFailed, match="cursor 'again' twice"):
        await list_tools(looping)


async def test_a_server_that_exits_is_reported_with_the_last_line_of_its_stderr() -> None:
    says = "import sys; print('starting', file=sys.stderr); sys.exit('MY_TOKEN is required\\n')"
    crash = McpSource(command=(sys.executable, "-c", says))
    with pytest.raises(ImportFailed) as caught:
        await list_source_tools(crash, timeout=30)
    assert str(caught.value) == (
        "the MCP server closed the connection before answering (it exited?); "
        "its stderr ends: MY_TOKEN is required"
    )


@pytest.fixture
async def http_url() -> AsyncIterator[str]:
    """The paged server over streamable HTTP on a loopback port, served by uvicorn."""
    async for url in _served(_paged_server(PAGES).streamable_http_app(), "/mcp"):
        yield url


@pytest.fixture
async def sse_url() -> AsyncIterator[str]:
    """A server over the older HTTP+SSE transport, which VS Code configs still name."""
    server = MCPServer("legacy")

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return text

    async for url in _served(server.sse_app(), "/sse"):
        yield url


async def _served(app: ASGIApp, path: str) -> AsyncIterator[str]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none")
    http = uvicorn.Server(config)
    task = asyncio.create_task(http.serve())
    deadline = time.monotonic() + 30
    while not http.started:
        assert not task.done(), "uvicorn stopped before it started"
        assert time.monotonic() < deadline, "uvicorn did not start"
        await asyncio.sleep(0.02)
    port = http.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}{path}"
    http.should_exit = True
    await asyncio.wait_for(task, timeout=30)


async def test_streamable_http_servers_are_listed_with_optional_headers(http_url: str) -> None:
    plain = await list_tools(McpSource(url=http_url).target())
    with_headers = McpSource(url=http_url, headers={"Authorization": "Bearer t0ken"})
    assert "t0ken" not in repr(with_headers)
    headed = await list_tools(with_headers.target())
    expected = [n for page in PAGES for n in page]
    assert [t["name"] for t in plain["tools"]] == expected
    assert json.dumps(headed["tools"]) == json.dumps(plain["tools"])


async def test_sse_servers_are_listed(sse_url: str) -> None:
    document = await list_source_tools(McpSource(url=sse_url, sse=True))
    assert [t["name"] for t in document["tools"]] == ["echo"]
