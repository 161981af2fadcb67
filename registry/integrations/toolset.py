"""What both tool-search adapters share: the tools a conversation has loaded, and one search.

A search's hits are loaded (their schemas fetched with the caller's key) before they are
offered to the model, so the model is only ever pointed at a tool the key may see and whose
definition the builder sends. The adapters only shape `Found` into their API's blocks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from registry.client import AsyncRegistryClient, InvalidRequest, NotFound, RegistryClient
from registry.proto import registry_pb2 as pb
from registry.wire import MAX_IDS

QUERY = "query"
# The one argument of both search tools: the capability wanted, in words.
QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        QUERY: {
            "type": "string",
            "description": (
                "The capability you need, in words: what the tool should do and to what "
                "(e.g. 'open a support ticket for a customer')."
            ),
        }
    },
    "required": [QUERY],
    "additionalProperties": False,
}

# What the model reads when the hits alone would mislead it. Both say what to do next.
NO_MATCH = (
    "No tool matches this request. Search again in other words (what the tool should do and "
    "to what), or tell the user that no tool fits."
)
WEAK_MATCH = (
    "Weak match: the registry judges that none of these tools fits the request well. Search "
    "again in other words, or tell the user that no tool fits, rather than relying on them."
)
FIX_QUERY = "Search again with `query` set to the capability you need, in words."
CHANGED = "The registry changed while searching. Search again."


@dataclass(frozen=True, kw_only=True)
class LoadedTool:
    """A registry tool as both APIs define one: its function name, never its id, is what the
    model sees and calls."""

    id: str
    function_name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None

    @classmethod
    def from_schema(cls, schema: pb.ToolSchema) -> LoadedTool:
        return cls(
            id=schema.id,
            function_name=schema.function_name,
            description=schema.description,
            input_schema=json.loads(schema.input_schema),
            output_schema=json.loads(schema.output_schema) if schema.output_schema else None,
        )


class Toolset:
    """The tools one conversation has loaded, in load order, by function name and by id.

    It grows as searches load their hits; build it from known ids with `load_toolset` to send
    the same deferred definitions from the first request on. Use one per caller (key): it
    holds what that caller may see.
    """

    def __init__(self, tools: Iterable[LoadedTool] = ()) -> None:
        self._by_name: dict[str, LoadedTool] = {}
        self._by_id: dict[str, LoadedTool] = {}
        self.add(tools)

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def tools(self) -> tuple[LoadedTool, ...]:
        return tuple(self._by_name.values())

    def add(self, tools: Iterable[LoadedTool]) -> None:
        for tool in tools:
            self._by_name[tool.function_name] = tool
            self._by_id[tool.id] = tool

    def add_schemas(self, schemas: Iterable[pb.ToolSchema]) -> None:
        self.add(LoadedTool.from_schema(schema) for schema in schemas)

    def named(self, function_name: str) -> LoadedTool | None:
        """The loaded tool the model called by this name; None for any other name."""
        return self._by_name.get(function_name)

    def capreg_id(self, function_name: str) -> str | None:
        tool = self._by_name.get(function_name)
        return tool.id if tool is not None else None

    def with_id(self, tool_id: str) -> LoadedTool | None:
        return self._by_id.get(tool_id)

    def missing(self, ids: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(i for i in ids if i not in self._by_id))


def load_toolset(client: RegistryClient, ids: Sequence[str]) -> Toolset:
    """A toolset holding these ids' schemas, fetched with the client's key; an id the key may
    not see fails exactly like an unknown one (`NotFound`)."""
    toolset = Toolset()
    wanted = list(dict.fromkeys(ids))
    for start in range(0, len(wanted), MAX_IDS):
        toolset.add_schemas(client.get_schema(wanted[start : start + MAX_IDS]).tools)
    return toolset


@dataclass(frozen=True, kw_only=True)
class Found:
    """One search as the model is told it: the tools to offer, best first, and a note when
    the tools alone would mislead ("" when they speak for themselves)."""

    tools: tuple[LoadedTool, ...]
    note: str
    # True when the search could not run as asked; `note` says how to call it instead.
    refused: bool = False


def field_of(item: object, name: str) -> object:
    """A field of an item the model produced: an SDK object or its plain-dict form."""
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def query_of(arguments: object) -> str:
    """The query the model searched for; "" when it sent none."""
    if isinstance(arguments, str):  # the JSON text some SDK surfaces keep
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return ""
    query = field_of(arguments, QUERY) if isinstance(arguments, Mapping) else None
    return query.strip() if isinstance(query, str) else ""


def found(toolset: Toolset, reply: pb.SearchResponse) -> Found:
    """A search reply, once its hits are loaded: the loaded hits in the registry's order."""
    tools = tuple(tool for hit in reply.hits if (tool := toolset.with_id(hit.id)) is not None)
    if not tools:
        return Found(tools=(), note=NO_MATCH)
    return Found(tools=tools, note=WEAK_MATCH if reply.weak_match else "")


def refusal(error: InvalidRequest | NotFound | None) -> Found:
    if isinstance(error, NotFound):
        return Found(tools=(), note=f"{error} {CHANGED}", refused=True)
    note = FIX_QUERY if error is None else f"{error} {FIX_QUERY}"
    return Found(tools=(), note=note, refused=True)


def search(client: RegistryClient, toolset: Toolset, arguments: object, *, limit: int) -> Found:
    """Runs the model's search with the client's key and loads the hits it returns.

    Mistakes the model can fix come back as a refusal it reads; anything else (the registry
    down, a bad key) is raised for the builder, as the client raised it.
    """
    query = query_of(arguments)
    if not query:
        return refusal(None)
    try:
        reply = client.search(query, limit=limit)
        if missing := toolset.missing(hit.id for hit in reply.hits):
            toolset.add_schemas(client.get_schema(missing).tools)
    except (InvalidRequest, NotFound) as exc:
        return refusal(exc)
    return found(toolset, reply)


async def search_async(
    client: AsyncRegistryClient,
    toolset: Toolset,
    arguments: object,
    *,
    limit: int,
    key: str | None,
) -> Found:
    """`search` through the async client; `key` is the caller's (None: the target's)."""
    query = query_of(arguments)
    if not query:
        return refusal(None)
    try:
        reply = await client.search(query, limit, key=key)
        if missing := toolset.missing(hit.id for hit in reply.hits):
            toolset.add_schemas((await client.get_schema(missing, key=key)).tools)
    except (InvalidRequest, NotFound) as exc:
        return refusal(exc)
    return found(toolset, reply)
