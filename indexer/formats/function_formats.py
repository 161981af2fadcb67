"""OpenAI and Anthropic tool definitions -> a native catalog document.

OpenAI: `[{"type": "function", "function": {name, description, parameters}}]`, the bare
function form `[{name, description, parameters}]` (the legacy `functions` list) and the
Responses API form `[{"type": "function", name, description, parameters}]`. Anthropic:
`[{name, description, input_schema}]`. Either may be wrapped as `{"tools": [...]}` (as in a
request body). Only shapes are mapped here; `indexer.formats` validates the result.
"""

from __future__ import annotations

from typing import Any

from indexer.formats.rules import NATIVE_VERSION, Converted
from indexer.model import CatalogFormat

# OpenAI lets a function without arguments omit `parameters`.
_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}
FIELDS = {
    "openai": {"input_schema": "parameters"},
    "anthropic": {},
}


def convert(document: object, fmt: CatalogFormat) -> Converted:
    """Maps an OpenAI or Anthropic tool list; problems name the entry as the file writes it."""
    converted = Converted(
        format=fmt,
        document={"capreg": NATIVE_VERSION, "tools": []},
        sources=[],
        fields=dict(FIELDS[fmt]),
    )
    entries, prefix = _entries(document)
    if entries is None:
        converted.problems.append(
            f"(root): an {fmt} tool list must be a JSON array of tools "
            "(or an object with a 'tools' list)"
        )
        return converted
    for index, entry in enumerate(entries):
        where = f"{prefix}[{index}]"
        if not isinstance(entry, dict):
            converted.problems.append(f"{where}: must be an object")
            continue
        mapped = _openai(entry, where) if fmt == "openai" else _anthropic(entry, where)
        if isinstance(mapped, str):
            converted.problems.append(mapped)
            continue
        label, tool = mapped
        converted.document["tools"].append(tool)
        converted.sources.append(label)
    return converted


def _entries(document: object) -> tuple[list[object] | None, str]:
    if isinstance(document, list):
        return document, ""
    if isinstance(document, dict):
        for key in ("tools", "functions"):
            if isinstance(document.get(key), list):
                return document[key], key
    return None, ""


def _named(where: str, value: dict[str, Any]) -> str:
    name = value.get("name")
    return f"{where} '{name}'" if isinstance(name, str) and name else where


def _openai(entry: dict[str, Any], where: str) -> tuple[str, dict[str, Any]] | str:
    """(label, native tool) or the problem that keeps the entry out."""
    kind = entry.get("type")
    if "function" in entry:
        function = entry["function"]
        if kind not in (None, "function"):
            return f"{where}.type: must be 'function' (is {kind!r})"
        if not isinstance(function, dict):
            return f"{where}.function: must be an object"
        label = f"{_named(where, function)}.function"
    elif kind not in (None, "function"):
        return (
            f"{where}.type: {kind!r} is a built-in OpenAI tool, not a function definition; "
            "only function tools can be registered"
        )
    else:
        function, label = entry, _named(where, entry)
    tool = {
        "name": function.get("name"),
        "description": function.get("description"),
        "input_schema": function.get("parameters", _NO_PARAMETERS),
    }
    return label, tool


def _anthropic(entry: dict[str, Any], where: str) -> tuple[str, dict[str, Any]] | str:
    kind = entry.get("type")
    label = _named(where, entry)
    if kind not in (None, "custom"):
        return (
            f"{label}.type: {kind!r} is an Anthropic server tool, not a client tool; only "
            "tools with an input_schema can be registered"
        )
    tool = {
        "name": entry.get("name"),
        "description": entry.get("description"),
        "input_schema": entry.get("input_schema"),
    }
    return label, tool
