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
    """A call an agent may make next with what a tool returned (see indexer/links.py)."""

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


@dataclass(kw_only=True, frozen=True)
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
    # Declared links only: derived ones are recomputed from the catalog (indexer/links.py).
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

    def required_scopes(self, tool: Tool) -> frozenset[str]:
        # The catalog's own set when the tool adds none: one object (its hash computed once)
        # for most of a catalog's tools.
        return self.default_scopes | tool.scopes if tool.scopes else self.default_scopes
