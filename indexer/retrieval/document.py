"""The text a tool is embedded and matched by, and the hash that keys its embedding."""

from __future__ import annotations

import functools
import hashlib
import re
from typing import Any

from indexer.model import EMBEDDED_DESCRIPTION, Tool

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[_\-./:]+")
MAX_PARAMETERS = 40


@functools.lru_cache(maxsize=1 << 16)
def split_identifier(name: str) -> str:
    """`getWeatherForecast` / `get_weather-forecast` -> `get weather forecast`.

    Remembered: parameter names repeat across tools (`query`, `limit`, `id`), and a restart
    splits every tool's name and parameters again (a third of deriving document texts)."""
    spaced = _SEPARATORS.sub(" ", _CAMEL.sub(" ", name))
    return " ".join(spaced.lower().split())


def _parameters(schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return []
    parts = []
    for key, spec in list(properties.items())[:MAX_PARAMETERS]:
        description = spec.get("description") if isinstance(spec, dict) else None
        words = split_identifier(str(key))
        parts.append(f"{words} ({description})" if isinstance(description, str) else words)
    return parts


def document_text(tool: Tool, catalog_title: str = "") -> str:
    """Catalog, tool name in words, description, parameters, tags and examples."""
    lines = [
        f"{catalog_title or tool.catalog}: {split_identifier(tool.name)}"
        + (f" ({tool.title})" if tool.title else ""),
        tool.description.strip()[:EMBEDDED_DESCRIPTION],
    ]
    parameters = _parameters(tool.input_schema)
    if parameters:
        lines.append("Parameters: " + "; ".join(parameters))
    if tool.tags:
        lines.append("Tags: " + ", ".join(tool.tags))
    if tool.examples:
        lines.append("Examples: " + " | ".join(tool.examples))
    return "\n".join(line for line in lines if line)


def document_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def summary(description: str, limit: int = 200) -> str:
    """The description's first sentence, on one line, at most `limit` characters."""
    text = " ".join(description.split())
    match = re.search(r"(?<=[.!?])\s", text)
    if match:
        text = text[: match.start()]
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…"
