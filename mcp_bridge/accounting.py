"""What a session with the bridge puts in the model's context, as the exact text sent: the
bridge's tools/list on every turn, and each discovery call with its answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from mcp_types import TextContent

from mcp_bridge import payloads
from mcp_bridge.server import build_server, static_key
from registry.client import AsyncRegistryClient, RegistryTarget
from registry.proto import registry_pb2 as pb

# Listing the bridge's tools never calls the registry: an address nothing answers on will do.
UNUSED_REGISTRY = "127.0.0.1:9"


async def listed_tools() -> list[dict[str, Any]]:
    """The bridge's tools as tools/list sends them."""
    async with AsyncRegistryClient(RegistryTarget(address=UNUSED_REGISTRY)) as client:
        server = build_server(client, static_key(None))
        return [
            tool.model_dump(by_alias=True, exclude_none=True, mode="json")
            for tool in await server.list_tools()
        ]


def answer_text(payload: payloads.Payload) -> str:
    """The text content of the tool result the bridge returns for a payload."""
    [content] = payloads.result(payload).content
    assert isinstance(content, TextContent)  # payloads.result builds exactly one, always
    return content.text


class BridgeExchanges:
    """The bridge's side of a discovery session (`capreg.evaluation.context_cost.Exchanges`)."""

    def __init__(self) -> None:
        self._tools_list = ""

    def tools_list(self) -> str:
        # As a client hands it to the model: each tool as a function definition (name,
        # description, parameters), exactly the form the static tools list is counted in
        # (`capreg.evaluation.context_cost.static_tokens`); annotations are for the client,
        # not the model.
        if not self._tools_list:
            tools = asyncio.run(listed_tools())
            definitions = [
                {
                    "type": "function",
                    "function": {
                        "name": tool["name"],
                        "description": tool["description"],
                        "parameters": tool["inputSchema"],
                    },
                }
                for tool in tools
            ]
            self._tools_list = json.dumps(definitions, ensure_ascii=False)
        return self._tools_list

    def search(self, query: str, limit: int, reply: pb.SearchResponse) -> str:
        arguments = json.dumps({"query": query, "limit": limit}, ensure_ascii=False)
        return f"{arguments}\n{answer_text(payloads.search_payload(reply))}"

    def schemas(self, ids: Sequence[str], reply: pb.GetSchemaResponse) -> str:
        arguments = json.dumps({"ids": list(ids)}, ensure_ascii=False)
        return f"{arguments}\n{answer_text(payloads.schema_payload(reply))}"
