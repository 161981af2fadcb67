"""The one tool model every catalog format is mapped to."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

JsonObject = dict[str, Any]

# A tool carries at most this many links, declared and derived together: GetSchema answers up
# to 50 tools at once, and a link list is read by a model, not browsed.
MAX_LINKS = 32
# Search reads at most this much of a tool's description (the rest stays in its schema): the
# model sees a few hundred tokens anyway, and one long description must not dominate BM25.
EMBEDDED_DESCRIPTION = 8_192


def canonical_json(value: object) -> str:
    """JSON text that is equal for equal values: the basis of content hashes."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class CatalogFormat(StrEnum):
    """The formats a catalog file may be written in; every one becomes a `Catalog`."""

    NATIVE = "native"
    MCP = "mcp"
    OPENAI = "openai"
    ANTHROPIC = "anthropic"
    OPENAPI = "openapi"


# Slots: a large catalog may carry hundreds of thousands of derived links.
@dataclass(kw_only=True, frozen=True, slots=True)
class ToolLink:
    """A call an agent may make next with what a tool returned (see indexer/derived_links.py)."""

    rel: str
    # "<catalog>/<tool name>": a tool of the same catalog or, when declared, of another.
    target_id: str
    # The target's input property -> where its value is in the source tool's result, a
    # JSONPath-like reference such as "$.id" or "$.items[0].id".
    arguments: Mapping[str, str] = field(default_factory=dict)
    # True when the registry derived the link from the schemas; declared links are False.
    derived: bool = False

    def to_json(self) -> JsonObject:
        """The declared form, as the stores keep it and the content hash reads it."""
        return {"rel": self.rel, "target": self.target_id, "arguments": dict(self.arguments)}


@dataclass(kw_only=True, frozen=True, slots=True)
class Tool:
    """One callable tool as the registry stores and serves it."""

    catalog: str
    name: str
    description: str
    input_schema: JsonObject
    output_schema: JsonObject | None = None
    annotations: JsonObject = field(default_factory=dict)
    title: str = ""
    tags: tuple[str, ...] = ()
    # The tool's own scopes; the catalog's defaults are added by `Catalog.required_scopes`.
    scopes: frozenset[str] = frozenset()
    examples: tuple[str, ...] = ()
    # Declared links only: derived ones are recomputed from the catalog (indexer/derived_links.py).
    links: tuple[ToolLink, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.catalog}/{self.name}"

    def content_hash(self) -> str:
        """Changes iff anything a GetSchema caller or the index could see changes."""
        payload: JsonObject = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "annotations": self.annotations,
            "title": self.title,
            "tags": list(self.tags),
            "scopes": sorted(self.scopes),
            "examples": list(self.examples),
        }
        # Only when present, so a tool without links keeps the hash it had before links
        # existed (an upgrade reports no change for catalogs that declare none).
        if self.links:
            payload["links"] = [link.to_json() for link in self.links]
        return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


@dataclass(kw_only=True, frozen=True, slots=True)
class Transition:
    """A move in a workflow: calling `tool` in state `source` leads to state `target`."""

    source: str
    # A tool of the workflow's catalog, by name.
    tool: str
    # The state the call leads to; equal to `source` for a tool that keeps the state (a lookup).
    target: str
    # A guard: the caller must hold every one of these scopes (besides being allowed to see the
    # tool) for the move to be offered.
    scopes: frozenset[str] = frozenset()
    # The call's arguments this move applies to (argument name -> a JSON scalar), for a tool
    # whose outcome depends on them (review with decision "approve" or "reject"); empty: any.
    when: Mapping[str, str | int | float | bool | None] = field(default_factory=dict)

    def matches(self, arguments: Mapping[str, object]) -> bool:
        return all(key in arguments and arguments[key] == v for key, v in self.when.items())

    def to_json(self) -> JsonObject:
        data: JsonObject = {"from": self.source, "tool": self.tool, "to": self.target}
        if self.scopes:
            data["scopes"] = sorted(self.scopes)
        if self.when:
            data["when"] = dict(self.when)
        return data


@dataclass(kw_only=True, frozen=True, slots=True)
class WorkflowState:
    name: str
    description: str = ""
    # A state where the workflow may end; a state that is neither terminal nor left by any
    # transition is a dead end (`capreg lint` warns).
    terminal: bool = False

    def to_json(self) -> JsonObject:
        data: JsonObject = {}
        if self.description:
            data["description"] = self.description
        if self.terminal:
            data["terminal"] = True
        return data


@dataclass(kw_only=True, frozen=True)
class Workflow:
    """Named states of one task, and the tools that move it on (see docs/catalog-format.md)."""

    name: str
    initial: str
    states: tuple[WorkflowState, ...]
    transitions: tuple[Transition, ...]
    title: str = ""
    description: str = ""

    def state(self, name: str) -> WorkflowState | None:
        return next((s for s in self.states if s.name == name), None)

    def leaving(self, state: str) -> tuple[Transition, ...]:
        """The moves declared from `state`, in declaration order."""
        return tuple(t for t in self.transitions if t.source == state)

    def to_json(self) -> JsonObject:
        """The declared form, as the stores keep it and the native format writes it."""
        data: JsonObject = {
            "name": self.name,
            "initial": self.initial,
            "states": {s.name: s.to_json() for s in self.states},
            "transitions": [t.to_json() for t in self.transitions],
        }
        if self.title:
            data["title"] = self.title
        if self.description:
            data["description"] = self.description
        return data


@dataclass(kw_only=True, frozen=True)
class Catalog:
    """A named set of tools registered, replaced and deleted as a whole."""

    name: str
    description: str
    tools: tuple[Tool, ...]
    title: str = ""
    version: str = ""
    default_scopes: frozenset[str] = frozenset()
    format: CatalogFormat = CatalogFormat.NATIVE
    workflows: tuple[Workflow, ...] = ()

    def required_scopes(self, tool: Tool) -> frozenset[str]:
        # The catalog's own set when the tool adds none: one object (its hash computed once)
        # for most of a catalog's tools.
        return self.default_scopes | tool.scopes if tool.scopes else self.default_scopes
