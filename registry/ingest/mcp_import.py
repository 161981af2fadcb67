"""Reads a live MCP server's tools (stdio subprocess or streamable HTTP) as catalog content.

The result is exactly an MCP `tools/list` result, all pages joined, so it registers through
the same "mcp" format as a saved file: re-importing an unchanged server changes nothing, and
a changed one updates only the tools that changed (the registry compares content hashes).
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED

from indexer.formats.rules import (
    MAX_CATALOG_DESCRIPTION,
    MAX_TITLE,
    MAX_VERSION,
    META_DESCRIPTION,
    META_TITLE,
    META_VERSION,
)

logger = logging.getLogger(__name__)

# A server whose cursors never end must not hang the import.
MAX_PAGES = 1_000
DEFAULT_TIMEOUT = 60.0
# How much of a failed server's stderr its failure quotes: the last line, which is where a
# crash says why.
STDERR_QUOTED = 300

McpTarget = StdioServerParameters | str | Transport | Server[Any]


class ImportFailed(Exception):
    """The server could not be started, reached, or listed; the message says which."""


@dataclass(kw_only=True, frozen=True)
class McpSource:
    """Where the server is: a command to start over stdio, or a streamable HTTP URL (an SSE
    one with `sse`)."""

    command: tuple[str, ...] = ()
    url: str = ""
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold tokens
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)  # may hold tokens
    cwd: str = ""
    sse: bool = False

    def target(self, errlog: TextIO | None = None) -> McpTarget:
        """What `list_tools` connects to; a stdio server's stderr goes to `errlog` if given."""
        if self.url:
            if self.sse:
                return sse_client(self.url, headers=dict(self.headers))
            return _http_transport(self.url, dict(self.headers)) if self.headers else self.url
        if not self.command:
            raise ImportFailed("give the server's command after '--', or --http URL")
        command, *args = self.command
        # The SDK passes only a safe subset of the environment; extra variables are explicit.
        parameters = StdioServerParameters(
            command=command,
            args=args,
            env={**get_default_environment(), **self.env},
            cwd=self.cwd or None,
        )
        return parameters if errlog is None else stdio_client(parameters, errlog=errlog)

    def describe(self) -> str:
        return self.url or " ".join(self.command)


@asynccontextmanager
async def _http_transport(
    url: str, headers: dict[str, str]
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
    timeout = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults for MCP over HTTP
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


async def list_tools(target: McpTarget, *, timeout: float = DEFAULT_TIMEOUT) -> dict[str, Any]:
    """The server's whole `tools/list` result, every page, as JSON-ready data."""
    try:
        with anyio.fail_after(timeout):
            return await _list_tools(target, timeout)
    except Exception as exc:  # the SDK raises many kinds; each becomes one clear line
        raise _failure(exc, timeout) from exc


async def list_source_tools(
    source: McpSource, *, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, Any]:
    """`list_tools` for one source, with a stdio server's stderr kept aside rather than mixed
    into the caller's: when the server fails, its last line of stderr joins the reason."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            return await list_tools(source.target(errlog), timeout=timeout)
        except ImportFailed as exc:
            said = _last_line(errlog)
            if not said:
                raise
            raise ImportFailed(f"{exc}; its stderr ends: {said}") from exc


def _last_line(errlog: TextIO) -> str:
    errlog.seek(0)
    lines = [line.strip() for line in errlog.read()[-64 * 1024 :].splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return last[:STDERR_QUOTED]


def _failure(exc: BaseException, timeout: float) -> ImportFailed:
    # The SDK's task groups wrap transport failures in exception groups.
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, ImportFailed):
        return exc
    if isinstance(exc, TimeoutError):
        return ImportFailed(f"the MCP server did not answer within {timeout:g}s")
    if isinstance(exc, MCPError) and exc.error.code == CONNECTION_CLOSED:
        return ImportFailed("the MCP server closed the connection before answering (it exited?)")
    if isinstance(exc, MCPError):
        return ImportFailed(f"the MCP server answered with an error: {exc.error.message}")
    if isinstance(exc, OSError | httpx2.TransportError):
        return ImportFailed(f"cannot start or reach the MCP server: {exc}")
    if isinstance(exc, httpx2.HTTPStatusError):
        status = exc.response.status_code
        return ImportFailed(f"the MCP server answered HTTP {status} {exc.response.reason_phrase}")
    return ImportFailed(f"the MCP server failed: {type(exc).__name__}: {exc}")


async def _list_tools(target: McpTarget, timeout: float) -> dict[str, Any]:
    # No response cache: an import must see what the server lists now.
    async with Client(target, read_timeout_seconds=timeout, cache=None) as client:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            tools += [
                t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools
            ]
            cursor = page.next_cursor
            if cursor is None:
                break
            if cursor in seen:
                raise ImportFailed(f"the server returned cursor {cursor!r} twice")
            seen.add(cursor)
        else:
            raise ImportFailed(f"tools/list did not end within {MAX_PAGES} pages")
        info = client.server_info
    document: dict[str, Any] = {"tools": tools}
    if info is not None:
        # The catalog's title and version come from the server's own identification.
        document["_meta"] = {
            META_TITLE: (info.title or info.name)[:MAX_TITLE],
            META_VERSION: info.version[:MAX_VERSION],
        }
        if info.description:
            document["_meta"][META_DESCRIPTION] = info.description[:MAX_CATALOG_DESCRIPTION]
    return document


def tools_list_content(document: dict[str, Any]) -> str:
    """Catalog content for RegisterCatalog: stable text, so re-imports hash the same."""
    return json.dumps(document, ensure_ascii=False, sort_keys=True, indent=1)
