"""Tools and catalogs a request names literally ("call get_weather_forecast", "use context7").

A caller who writes an identifier means that tool or server, whatever the words around it
say. Only names that read as identifiers count: with a separator or a digit (`get_weather`,
`context7`; matched in any case) or an inner capital (`getWeather`; matched in its own case
only, since "copyediting" is a word and `copyEditing` a name). A tool called `search` or a
catalog called `time` is an ordinary word in a request and is left to the ranking. A tool's
full id (`catalog/tool`) and its function-calling name always count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

_MARKED = re.compile(r"[_\-.0-9]")
_CAMEL = re.compile(r"[a-z][A-Z]")
# Runs of identifier characters; a trailing separator is sentence punctuation ("use x.").
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-./:]*")
MIN_LENGTH = 3


def lookup_key(name: str) -> str | None:
    """The key a name is found by in a request's tokens: lowercased for `get_weather`,
    `12306-mcp`, `context7`; as written for `getWeather`; None for a word like `search`."""
    if len(name) < MIN_LENGTH:
        return None
    if _MARKED.search(name):
        return name.lower()
    return name if _CAMEL.search(name) else None


def tokens(text: str) -> set[str]:
    """The request's identifier-shaped words, as written and lowercased."""
    found: set[str] = set()
    for match in _TOKEN.finditer(text):
        token = match.group().rstrip("_-./:")
        if token:
            found.update((token, token.lower()))
    return found


@dataclass(frozen=True)
class Named:
    """Rows of the tools a request names, and codes of the catalogs it names."""

    rows: NDArray[np.int64]
    catalogs: NDArray[np.int32]


NOTHING = Named(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))


class Literals:
    """Lookup from the names tools and catalogs are called by to their rows and codes."""

    def __init__(
        self,
        tools: Sequence[tuple[str, str, str]],
        catalog_codes: dict[str, int],
    ) -> None:
        """`tools`: (id, name, function name) per row; `catalog_codes`: name -> code."""
        self._tools: dict[str, list[int]] = {}
        for row, (tool_id, name, function) in enumerate(tools):
            keys = {tool_id.lower(), function.lower(), lookup_key(name)}
            for key in keys - {None}:
                self._tools.setdefault(str(key), []).append(row)
        self._catalogs: dict[str, int] = {}
        for catalog, code in catalog_codes.items():
            key = lookup_key(catalog)
            if key is not None:
                self._catalogs[key] = code

    def named(self, text: str) -> Named:
        """What `text` names literally (empty arrays when nothing)."""
        words = tokens(text)
        rows = sorted({row for word in words for row in self._tools.get(word, ())})
        codes = sorted({self._catalogs[word] for word in words if word in self._catalogs})
        if not rows and not codes:
            return NOTHING
        return Named(np.asarray(rows, dtype=np.int64), np.asarray(codes, dtype=np.int32))
