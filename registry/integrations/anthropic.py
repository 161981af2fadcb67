"""Client-side tool search for the Anthropic Messages API, as plain payloads.

The builder sends `tools()`: a custom search tool beside the loaded tools' definitions, each
with `defer_loading: true`. When Claude calls the search tool, `handle` (or `handle_async`)
runs the search through the registry client and answers with the `tool_result` block whose
content is one `tool_reference` block per hit (`{"type": "tool_reference", "tool_name": ...}`);
the API then expands each reference into the deferred definition of that name. A weak match,
no hit, or a search that could not run adds a `text` block saying what to do instead.
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

SEARCH_TOOL_NAME = "search_tools"
SEARCH_DESCRIPTION = (
    "Search the tool registry for the tools this task needs and load them. Describe the "
    "capability in words; the best matching tools become callable by their own names. "
    "Search again in other words when nothing fits."
)


class ToolDefinition(TypedDict):
    """A custom tool as `tools` takes it (the SDK's `ToolParam`)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    defer_loading: NotRequired[bool]


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ToolReferenceBlock(TypedDict):
    """Loads the deferred tool of this name (the SDK's `ToolReferenceBlockParam`)."""

    type: Literal["tool_reference"]
    tool_name: str


class ToolResultBlock(TypedDict):
    """The answer to a `tool_use` (the SDK's `ToolResultBlockParam`)."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: list[TextBlock | ToolReferenceBlock]
    is_error: NotRequired[bool]


class ToolUse(Protocol):
    """What the SDK's `ToolUseBlock` offers (its plain-dict form is accepted too)."""

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def input(self) -> object: ...


def deferred_definition(tool: LoadedTool) -> ToolDefinition:
    """A loaded tool, named by its function name, loaded only when a reference names it."""
    return {
        "name": tool.function_name,
        "description": tool.description,
        "input_schema": tool.input_schema,
        "defer_loading": True,
    }


def tool_result(tool_use_id: str, found: Found) -> ToolResultBlock:
    """The `tool_result` for one search: the note first (when there is one), then a
    `tool_reference` per tool, best first."""
    content: list[TextBlock | ToolReferenceBlock] = []
    if found.note:
        content.append({"type": "text", "text": found.note})
    content.extend({"type": "tool_reference", "tool_name": t.function_name} for t in found.tools)
    block: ToolResultBlock = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if found.refused:
        block["is_error"] = True
    return block


@dataclass(frozen=True, kw_only=True)
class AnthropicToolSearch:
    """One conversation's tool search: the tools to send and the answer to each search.

    `toolset` holds the caller's loaded tools and grows with each search; `limit` is the
    registry's (0: its confident set, at most 5 tools).
    """

    toolset: Toolset = field(default_factory=Toolset)
    name: str = SEARCH_TOOL_NAME
    description: str = SEARCH_DESCRIPTION
    limit: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 0 and {MAX_LIMIT}")
        # Function names always hold '__' (`<catalog>__<tool>`), so a name without one can
        # never shadow a registry tool.
        if "__" in self.name:
            raise ValueError("the search tool's name must not contain '__'")

    def tools(self) -> list[ToolDefinition]:
        """`tools` for the next request: the search tool, then every loaded tool deferred."""
        return [self.search_tool(), *self.deferred_tools()]

    def search_tool(self) -> ToolDefinition:
        return {"name": self.name, "description": self.description, "input_schema": QUERY_SCHEMA}

    def deferred_tools(self) -> list[ToolDefinition]:
        return [deferred_definition(tool) for tool in self.toolset.tools]

    def is_search(self, tool_use: object) -> bool:
        return field_of(tool_use, "name") == self.name

    def capreg_id(self, function_name: str) -> str | None:
        """The registry id of the tool Claude called by this name; None if not loaded here."""
        return self.toolset.capreg_id(function_name)

    def handle(
        self, client: RegistryClient, tool_use: ToolUse | Mapping[str, Any]
    ) -> ToolResultBlock:
        """Runs Claude's search through a blocking client; the block goes in the next user
        message. Registry failures Claude cannot fix are raised."""
        found = search(client, self.toolset, field_of(tool_use, "input"), limit=self.limit)
        return tool_result(_use_id(tool_use), found)

    async def handle_async(
        self,
        client: AsyncRegistryClient,
        tool_use: ToolUse | Mapping[str, Any],
        *,
        key: str | None = None,
    ) -> ToolResultBlock:
        """`handle` through the async client, with the caller's key (None: the target's)."""
        found = await search_async(
            client, self.toolset, field_of(tool_use, "input"), limit=self.limit, key=key
        )
        return tool_result(_use_id(tool_use), found)


def _use_id(tool_use: ToolUse | Mapping[str, Any]) -> str:
    use_id = field_of(tool_use, "id")
    if not isinstance(use_id, str) or not use_id:
        raise ValueError("a tool_use block carries its id")
    return use_id
