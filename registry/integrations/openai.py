"""Client-executed tool search for the OpenAI Responses API, as plain payloads.

The builder sends `tools()`: one `{"type": "tool_search", "execution": "client", ...}` tool.
When the model searches, its output holds a `tool_search_call` item (`execution: "client"`,
a `call_id`, the `arguments` it chose); `handle` (or `handle_async`) runs the search through
the registry client and returns the input items to send back: the `tool_search_output` item
for that `call_id`, whose `tools` are the hits' function definitions (`defer_loading: true`),
then, for a weak match, no hit, or a search that could not run, a developer message saying
what to do instead. The model then calls a loaded tool as an ordinary `function_call`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, Protocol, TypedDict

from registry.client import AsyncRegistryClient, RegistryClient
from registry.integrations.toolset import (
    QUERY_SCHEMA,
    Found,
    LoadedTool,
    Toolset,
    field_of,
    search,
    search_async,
)
from registry.wire import MAX_LIMIT

SEARCH_DESCRIPTION = (
    "Search the tool registry for the tools this task needs and load them. Describe the "
    "capability in words; the best matching tools are loaded and become callable. Search "
    "again in other words when nothing fits."
)


class ToolSearchDefinition(TypedDict):
    """The client-executed search tool (the SDK's `ToolSearchToolParam`)."""

    type: Literal["tool_search"]
    execution: Literal["client"]
    description: str
    parameters: dict[str, Any]


class FunctionDefinition(TypedDict):
    """A function tool (the SDK's `FunctionToolParam`)."""

    type: Literal["function"]
    name: str
    description: str
    parameters: dict[str, Any]
    # Registry schemas are arbitrary JSON Schema; strict mode accepts only a subset of it.
    strict: bool
    defer_loading: bool
    output_schema: NotRequired[dict[str, Any]]


class ToolSearchOutput(TypedDict):
    """The answer to a client `tool_search_call` (the SDK's `ResponseToolSearchOutputItemParam`)."""

    type: Literal["tool_search_output"]
    execution: Literal["client"]
    status: Literal["completed"]
    call_id: NotRequired[str]
    tools: list[FunctionDefinition]


class DeveloperMessage(TypedDict):
    type: Literal["message"]
    role: Literal["developer"]
    content: str


InputItem = ToolSearchOutput | DeveloperMessage


class ToolSearchCall(Protocol):
    """What the SDK's `ResponseToolSearchCall` offers (its plain-dict form is accepted too)."""

    @property
    def type(self) -> str: ...

    @property
    def call_id(self) -> str | None: ...

    @property
    def arguments(self) -> object: ...


def function_definition(tool: LoadedTool) -> FunctionDefinition:
    """A loaded tool as a deferred function, named by its function name."""
    definition: FunctionDefinition = {
        "type": "function",
        "name": tool.function_name,
        "description": tool.description,
        "parameters": tool.input_schema,
        "strict": False,
        "defer_loading": True,
    }
    if tool.output_schema is not None:
        definition["output_schema"] = tool.output_schema
    return definition


def output_items(call_id: str | None, found: Found) -> list[InputItem]:
    """The items answering one search: its `tool_search_output` (the hits' definitions, best
    first), then the note as a developer message when there is one."""
    output: ToolSearchOutput = {
        "type": "tool_search_output",
        "execution": "client",
        "status": "completed",
        "tools": [function_definition(tool) for tool in found.tools],
    }
    if call_id is not None:
        output["call_id"] = call_id
    items: list[InputItem] = [output]
    if found.note:
        items.append({"type": "message", "role": "developer", "content": found.note})
    return items


@dataclass(frozen=True, kw_only=True)
class OpenAIToolSearch:
    """One conversation's tool search: the search tool to send and the answer to each call.

    `toolset` holds the caller's loaded tools and grows with each search; `limit` is the
    registry's (0: its confident set, at most 5 tools).
    """

    toolset: Toolset = field(default_factory=Toolset)
    description: str = SEARCH_DESCRIPTION
    limit: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 0 and {MAX_LIMIT}")

    def tools(self) -> list[ToolSearchDefinition]:
        """`tools` for each request. Loaded tools travel in `tool_search_output` items, which
        stay in the conversation, so they are not repeated here."""
        return [self.search_tool()]

    def search_tool(self) -> ToolSearchDefinition:
        return {
            "type": "tool_search",
            "execution": "client",
            "description": self.description,
            "parameters": QUERY_SCHEMA,
        }

    def deferred_tools(self) -> list[FunctionDefinition]:
        """Every loaded tool as a deferred function definition."""
        return [function_definition(tool) for tool in self.toolset.tools]

    def is_search(self, item: object) -> bool:
        """Whether an output item is a search this client must run."""
        return field_of(item, "type") == "tool_search_call" and (
            field_of(item, "execution") == "client"
        )

    def capreg_id(self, function_name: str) -> str | None:
        """The registry id of the function the model called; None if not loaded here."""
        return self.toolset.capreg_id(function_name)

    def handle(
        self, client: RegistryClient, call: ToolSearchCall | Mapping[str, Any]
    ) -> list[InputItem]:
        """Runs the model's search through a blocking client; the items go in the next
        request's `input`, after the call. Registry failures the model cannot fix are raised."""
        found = search(client, self.toolset, field_of(call, "arguments"), limit=self.limit)
        return output_items(_call_id(call), found)

    async def handle_async(
        self,
        client: AsyncRegistryClient,
        call: ToolSearchCall | Mapping[str, Any],
        *,
        key: str | None = None,
    ) -> list[InputItem]:
        """`handle` through the async client, with the caller's key (None: the target's)."""
        found = await search_async(
            client, self.toolset, field_of(call, "arguments"), limit=self.limit, key=key
        )
        return output_items(_call_id(call), found)


def _call_id(call: ToolSearchCall | Mapping[str, Any]) -> str | None:
    call_id = field_of(call, "call_id")
    return call_id if isinstance(call_id, str) else None
