"""An MCP `tools/list` result -> a native catalog document.

capreg's extras (scopes, tags, examples, links, the catalog's title, description and
workflows) ride in MCP's own `_meta` fields, so a plain MCP server's answer registers as it
is. Only shapes are mapped here; `indexer.formats.native` validates the result.
"""

from __future__ import annotations

from typing import Any

from indexer.formats.rules import (
    META_DEFAULT_SCOPES,
    META_DESCRIPTION,
    META_EXAMPLES,
    META_LINKS,
    META_SCOPES,
    META_TAGS,
    META_TITLE,
    META_VERSION,
    META_WORKFLOWS,
    NATIVE_VERSION,
    CatalogError,
    Converted,
)
from indexer.model import CatalogFormat

FIELDS = {
    "input_schema": "inputSchema",
    "output_schema": "outputSchema",
    "tags": f"_meta.{META_TAGS}",
    "required_scopes": f"_meta.{META_SCOPES}",
    "examples": f"_meta.{META_EXAMPLES}",
    "links": f"_meta.{META_LINKS}",
}
CATALOG_FIELDS = {
    "description": f"_meta.{META_DESCRIPTION}",
    "title": f"_meta.{META_TITLE}",
    "version": f"_meta.{META_VERSION}",
    "default_scopes": f"_meta.{META_DEFAULT_SCOPES}",
    "workflows": f"_meta.{META_WORKFLOWS}",
}


def convert(document: object, name: str = "") -> Converted:
    """Maps a tools/list result; problems name fields as MCP spells them (`inputSchema`)."""
    if not isinstance(document, dict):
        raise CatalogError(name, ["an MCP tools/list result must be an object"])
    converted = Converted(
        format=CatalogFormat.MCP,
        document={"capreg": NATIVE_VERSION},
        sources=[],
        fields=dict(FIELDS),
        catalog_fields=dict(CATALOG_FIELDS),
        noun="MCP tools/list",
    )
    meta = document.get("_meta") or {}
    if not isinstance(meta, dict):
        converted.problems.append("_meta: must be an object")
        meta = {}
    for native, key in (
        ("description", META_DESCRIPTION),
        ("title", META_TITLE),
        ("version", META_VERSION),
        ("default_scopes", META_DEFAULT_SCOPES),
        ("workflows", META_WORKFLOWS),
    ):
        if key in meta:
            converted.document[native] = meta[key]
    tools = document.get("tools")
    if isinstance(tools, list):
        converted.document["tools"] = [
            _tool(entry, index, converted.problems) for index, entry in enumerate(tools)
        ]
    elif tools is not None:
        converted.document["tools"] = tools
    return converted


def _tool(entry: object, index: int, problems: list[str]) -> object:
    if not isinstance(entry, dict):
        return entry  # the validator names it: tools[i] must be an object
    meta = entry.get("_meta") or {}
    if not isinstance(meta, dict):
        raw = entry.get("name")
        label = f"tools[{index}] '{raw}'" if isinstance(raw, str) and raw else f"tools[{index}]"
        problems.append(f"{label}._meta: must be an object")
        meta = {}
    tool: dict[str, Any] = {
        "name": entry.get("name"),
        "description": entry.get("description"),
        "input_schema": entry.get("inputSchema"),
        "output_schema": entry.get("outputSchema"),
        "annotations": entry.get("annotations"),
        "title": entry.get("title"),
        "tags": meta.get(META_TAGS),
        "required_scopes": meta.get(META_SCOPES),
        "examples": meta.get(META_EXAMPLES),
        "links": meta.get(META_LINKS),
    }
    return {key: value for key, value in tool.items() if value is not None}
