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
    """The request's identifier-shaped words, as written."""
    return {t for t in (m.group().rstrip("_-./:") for m in _TOKEN.finditer(text)) if t}


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
        """`tools`: (id, name, function name) per row; `catalog_codes`: name -> code.

        Every name is filed lowercased, without checking its shape (a snapshot of 100k tools
        builds this in a fraction of a second); whether a name counts is decided for the few
        a request's words hit."""
        self._names = [name for _, name, _ in tools]
        self._exact: dict[str, int] = {}
        self._by_name: dict[str, list[int]] = {}
        for row, (tool_id, name, function) in enumerate(tools):
            self._exact[tool_id.lower()] = row
            self._exact[function.lower()] = row
            self._by_name.setdefault(name.lower(), []).append(row)
        self._catalogs = {name.lower(): (name, code) for name, code in catalog_codes.items()}

    def named(self, text: str) -> Named:
        """What `text` names literally (empty arrays when nothing)."""
        written = tokens(text)
        lowered = {word.lower() for word in written}
        words = written | lowered  # what a name's lookup key may equal
        rows: set[int] = set()
        codes: set[int] = set()
        for word in lowered:  # every key is lowercase
            row = self._exact.get(word)
            if row is not None:
                rows.add(row)
            for row in self._by_name.get(word, ()):
                if lookup_key(self._names[row]) in words:
                    rows.add(row)
            catalog = self._catalogs.get(word)
            if catalog is not None and lookup_key(catalog[0]) in words:
                codes.add(catalog[1])
        if not rows and not codes:
            return NOTHING
        return Named(
            np.asarray(sorted(rows), dtype=np.int64), np.asarray(sorted(codes), dtype=np.int32)
        )
