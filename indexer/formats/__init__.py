"""Catalog files (native, MCP tools/list, OpenAI, Anthropic, OpenAPI) -> validated `Catalog`s.

The one entry: `parse_catalog` detects the format, a converter maps a foreign document to a
native one (see `rules.Converted`), and one validator (`native`, with one set of size limits)
checks the whole catalog before anything is returned, naming every problem with the entry it
concerns and the rule it breaks.
"""

from __future__ import annotations

from collections.abc import Sequence

from indexer.documents import DocumentError, load_document
from indexer.formats import function_formats, mcp, openapi
from indexer.formats.native import parse_native
from indexer.formats.rules import (
    FORMATS,
    MAX_CONTENT_BYTES,
    CatalogError,
)
from indexer.model import Catalog, CatalogFormat

__all__ = ["FORMATS", "CatalogError", "CatalogFormat", "detect_format", "parse_catalog"]

# Converted to a native document by the shape of their tool entries (see `_entry_format`).
FOREIGN_FORMATS = (CatalogFormat.OPENAI, CatalogFormat.ANTHROPIC, CatalogFormat.OPENAPI)


def parse_catalog(content: str, *, name: str = "", fmt: str = "") -> Catalog:
    """Parses and validates catalog file text; raises CatalogError naming every problem."""
    if len(content.encode("utf-8", errors="replace")) > MAX_CONTENT_BYTES:
        raise CatalogError(name, [f"content is larger than {MAX_CONTENT_BYTES} bytes"])
    try:
        document = load_document(content)
    except DocumentError as exc:
        # Not one_line: the excerpt and its caret are lines of their own (and bounded).
        raise CatalogError(name, [f"content: {exc}"]) from exc
    if fmt in ("", "auto"):
        chosen = detect_format(document, name)
    elif fmt in FORMATS:
        chosen = CatalogFormat(fmt)
    else:
        raise CatalogError(name, [f"format '{fmt}' is not one of: auto, {', '.join(FORMATS)}"])
    if chosen == CatalogFormat.NATIVE:
        return parse_native(document, name)
    if chosen == CatalogFormat.MCP:
        converted = mcp.convert(document, name)
    elif chosen == CatalogFormat.OPENAPI:
        converted = openapi.convert(document)
    else:
        converted = function_formats.convert(document, chosen)
    return parse_native(converted.document, name, converted)


def detect_format(document: object, name: str = "") -> CatalogFormat:
    """The format of a loaded document, from its shape alone (see docs/catalog-format.md)."""
    if isinstance(document, dict):
        if "capreg" in document:
            return CatalogFormat.NATIVE
        if "openapi" in document:
            return CatalogFormat.OPENAPI
        if "swagger" in document:
            raise CatalogError(
                name, ["swagger: Swagger 2.0 is not supported; convert it to OpenAPI 3 first"]
            )
        for key in ("tools", "functions"):
            entries = document.get(key)
            if isinstance(entries, list) and "name" not in document:
                # An empty or unrecognisable list stays MCP, whose validation says what is missing.
                return _entry_format(entries) or (
                    CatalogFormat.MCP if key == "tools" else CatalogFormat.OPENAI
                )
    if isinstance(document, list):
        fmt = _entry_format(document)
        if fmt is not None and fmt in FOREIGN_FORMATS:
            return fmt
    raise CatalogError(
        name,
        [
            "cannot tell the format: a native catalog has a top-level 'capreg: 1'; an MCP "
            "tools/list result is an object with a 'tools' list of {name, inputSchema}; an "
            "OpenAI list holds {type: function, function: {...}} or {name, parameters}; an "
            "Anthropic list holds {name, input_schema}; an OpenAPI document has 'openapi: 3.x'"
        ],
    )


def _entry_format(entries: Sequence[object]) -> CatalogFormat | None:
    """The format a list of tool entries is written in, judged by its first object."""
    entry = next((e for e in entries if isinstance(e, dict)), None)
    if entry is None:
        return None
    if "inputSchema" in entry:
        return CatalogFormat.MCP
    if "input_schema" in entry:
        return CatalogFormat.ANTHROPIC
    if entry.get("type") == "function" or "function" in entry or "parameters" in entry:
        return CatalogFormat.OPENAI
    return None
