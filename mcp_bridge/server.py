"""The MCP server: three discovery tools that answer from the registry, and nothing else."""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import grpc
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, CallToolResult, ToolAnnotations
from pydantic import Field
from starlette.requests import Request

from mcp_bridge import affordances, payloads
from mcp_bridge.payloads import Payload
from registry.client import (
    AccessRefused,
    AsyncRegistryClient,
    InvalidRequest,
    NotFound,
    RegistryCallFailed,
    RegistryFault,
    RegistryUnavailable,
)
from registry.wire import bearer_key

logger = logging.getLogger(__name__)

REFUSED = "the tool registry refused the credentials"
KEY_HINT = "a stdio bridge sends CAPREG_API_KEY; HTTP clients send 'Authorization: Bearer <key>'"

# Whose key a call carries to the registry. It may raise AccessRefused.
KeySource = Callable[[Context[Any, Any]], str | None]

INSTRUCTIONS = (
    "Tools are not preloaded: search_tools finds the ones a task needs, get_tool_schema "
    "gives their definitions."
)

# Every word below is sent on every turn of every agent that connects: keep them earned
# (`python -m bench.bridge_tools` counts them; `capreg context --turns` shows what they cost).
# "One search per step": searched step by step, a LiveMCPBench task's confident answers hold
# about 2.7 tools and half its gold; searched whole, its best 3 hold a third (docs/bridge.md).
SEARCH_TOOLS = (
    "Find tools for a capability you lack (ids, scores, summaries); search once per step of "
    "a task. A weak match means none fits. In a workflow, pass workflow and state."
)
GET_TOOL_SCHEMA = "Definitions of the tools you will call, by id. Not run here."
LIST_CATALOGS = "Catalogs and workflows you may search."

# No descriptions: the tool's own description says what they are.
Query = str
Limit = Annotated[int, Field(ge=1, le=50)]
Workflow = str
State = str
Ids = Annotated[list[str], Field(min_length=1, max_length=50)]
# A workflow state's moves are ranked whole: the registry's largest page.
MAX_RANKED = 50


def static_key(key: str | None) -> KeySource:
    """Stdio: every call carries the one key the bridge was started with (or none)."""

    def source(_ctx: Context[Any, Any]) -> str | None:
        return key

    return source


def forwarded_bearer(ctx: Context[Any, Any]) -> str:
    """HTTP: each call carries its own client's bearer key, never a key of the bridge's."""
    request = ctx.request_context.request
    key = bearer_key(request.headers.items()) if isinstance(request, Request) else None
    if key is None:  # RequireBearer turns these away first; this guards other mountings
        raise AccessRefused(
            grpc.StatusCode.UNAUTHENTICATED,
            "no key",
            f"{REFUSED}: this request carries no key ({KEY_HINT})",
        )
    return key


def protocol_error(error: RegistryCallFailed) -> MCPError:
    """Failures the model cannot fix; registry.client made their messages safe. The
    registry's own wording on credentials names its CLI's options: say what a bridge user
    can change instead."""
    if not isinstance(error, AccessRefused):
        return MCPError(code=INTERNAL_ERROR, message=str(error))
    if error.code is grpc.StatusCode.PERMISSION_DENIED:
        message = f"{REFUSED}: this API key lacks the scope the call needs"
    elif error.details == "no key":
        message = str(error)
    else:
        message = f"{REFUSED}: a valid API key is required ({KEY_HINT})"
    return MCPError(code=INVALID_REQUEST, message=message)


def _query_hash(query: str) -> str:
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:12]


class DiscoveryTools:
    """The bodies of the three tools; registry failures are mapped in `_answer` alone."""

    def __init__(self, client: AsyncRegistryClient, keys: KeySource) -> None:
        self._client = client
        self._keys = keys

    async def _answer(
        self,
        ctx: Context[Any, Any],
        fetch: Callable[[str | None], Awaitable[Payload]],
        recover: Callable[[RegistryCallFailed], Payload],
    ) -> CallToolResult:
        try:
            payload = await fetch(self._keys(ctx))
        except (InvalidRequest, NotFound) as exc:
            # The model's own mistake: an isError result it can read and act on.
            return payloads.result(recover(exc), is_error=True)
        except RegistryCallFailed as exc:
            broken = isinstance(exc, RegistryUnavailable | RegistryFault)
            logger.log(
                logging.WARNING if broken else logging.INFO,
                "registry call failed: %s",
                exc.one_line(),
            )
            raise protocol_error(exc) from None
        return payloads.result(payload)

    async def search_tools(
        self,
        query: Query,
        ctx: Context[Any, Any],
        limit: Limit = 5,
        workflow: Workflow = "",
        state: State = "",
    ) -> CallToolResult:
        async def fetch(key: str | None) -> Payload:
            reply = await self._client.search(query, limit, key=key)
            logger.debug("search %s limit=%d: %d hits", _query_hash(query), limit, len(reply.hits))
            return payloads.search_payload(reply)

        async def moves(key: str | None) -> Payload:
            # Every legal move, those the request matches first.
            legal = await self._client.get_affordances(workflow, state, key=key)
            ranked = await self._client.search(
                query, MAX_RANKED, key=key, workflow=workflow, state=legal.state
            )
            return affordances.moves_payload(legal, ranked)

        if workflow:
            return await self._answer(ctx, moves, affordances.moves_recovery)
        return await self._answer(ctx, fetch, payloads.search_recovery)

    async def get_tool_schema(self, ids: Ids, ctx: Context[Any, Any]) -> CallToolResult:
        async def fetch(key: str | None) -> Payload:
            return payloads.schema_payload(await self._client.get_schema(ids, key=key))

        return await self._answer(ctx, fetch, lambda exc: payloads.schema_recovery(exc, ids))

    async def list_catalogs(self, ctx: Context[Any, Any]) -> CallToolResult:
        async def fetch(key: str | None) -> Payload:
            reply = await self._client.list_catalogs(key=key)
            return affordances.with_workflows(payloads.catalogs_payload(reply), reply)

        return await self._answer(ctx, fetch, payloads.plain_recovery)


def _version() -> str:
    try:
        return importlib.metadata.version("capreg")
    except importlib.metadata.PackageNotFoundError:  # running from a checkout, not installed
        return ""


# Advertised schemas keep types, required arguments and defaults; titles repeat the names and
# bounds are enforced anyway (an argument out of bounds is an error result naming the bound).
UNADVERTISED = frozenset({"title", "minimum", "maximum", "minItems", "maxItems"})


def _lean(schema: Any) -> Any:
    """A JSON Schema without what costs every agent tokens on every turn and tells the model
    nothing it needs (see UNADVERTISED), nor empty-string defaults (an optional text argument
    left out is empty anyway)."""
    if isinstance(schema, dict):
        return {
            key: _lean(value)
            for key, value in schema.items()
            if key not in UNADVERTISED and not (key == "default" and value == "")
        }
    if isinstance(schema, list):
        return [_lean(item) for item in schema]
    return schema


def discovery_tool(
    fn: Callable[..., Awaitable[CallToolResult]], name: str, description: str
) -> Tool:
    tool = Tool.from_function(
        fn, name=name, description=description, annotations=ToolAnnotations(read_only_hint=True)
    )
    # Only what is advertised changes: arguments are still validated by the function's types.
    return tool.model_copy(update={"parameters": _lean(tool.parameters)})


def discovery_tools(client: AsyncRegistryClient, keys: KeySource) -> list[Tool]:
    """search_tools, get_tool_schema and list_catalogs, as the bridge advertises them."""
    tools = DiscoveryTools(client, keys)
    return [
        discovery_tool(tools.search_tools, payloads.SEARCH_TOOLS, SEARCH_TOOLS),
        discovery_tool(tools.get_tool_schema, payloads.GET_TOOL_SCHEMA, GET_TOOL_SCHEMA),
        discovery_tool(tools.list_catalogs, payloads.LIST_CATALOGS, LIST_CATALOGS),
    ]


def build_server(client: AsyncRegistryClient, keys: KeySource) -> MCPServer:
    """An MCP server exposing exactly search_tools, get_tool_schema and list_catalogs."""
    return MCPServer(
        "capreg",
        instructions=INSTRUCTIONS,
        version=_version(),
        log_level="WARNING",
        tools=discovery_tools(client, keys),
    )
