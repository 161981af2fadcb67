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
from collections.abc import Callable, Iterable
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


# A tool as the lookup files it: (id, name, function-calling name).
Spelled = tuple[str, str, str]


class Literals:
    """Lookup from the names tools and catalogs are called by to tool ids and catalog names.

    Keyed by ids and names, not rows, so a snapshot that changes a few catalogs copies the
    previous lookup and patches those catalogs' tools (`spliced`), instead of filing every
    name again; rows are resolved per request. Every name is filed lowercased, without
    checking its shape; whether a name counts is decided for the few a request's words hit.
    """

    def __init__(self, tools: Iterable[Spelled] = (), catalogs: Iterable[str] = ()) -> None:
        # Lowercased id or function name -> ids; lowercased tool name -> ids; lowercased
        # catalog name -> name. Values are tuples: copies of the lookup share them safely.
        self._exact: dict[str, tuple[str, ...]] = {}
        self._by_name: dict[str, tuple[str, ...]] = {}
        self._catalogs: dict[str, str] = {}
        self._add(tools, catalogs)

    def spliced(
        self,
        removed: Iterable[Spelled],
        removed_catalogs: Iterable[str],
        added: Iterable[Spelled],
        added_catalogs: Iterable[str],
    ) -> Literals:
        """A copy of this lookup without `removed` and with `added` (this one is unchanged)."""
        copy = Literals.__new__(Literals)
        copy._exact = dict(self._exact)
        copy._by_name = dict(self._by_name)
        copy._catalogs = dict(self._catalogs)
        for tool_id, name, function in removed:
            _drop(copy._exact, tool_id.lower(), tool_id)
            _drop(copy._exact, function.lower(), tool_id)
            _drop(copy._by_name, name.lower(), tool_id)
        for catalog in removed_catalogs:
            copy._catalogs.pop(catalog.lower(), None)
        copy._add(added, added_catalogs)
        return copy

    def _add(self, tools: Iterable[Spelled], catalogs: Iterable[str]) -> None:
        for tool_id, name, function in tools:
            _file(self._exact, tool_id.lower(), tool_id)
            _file(self._exact, function.lower(), tool_id)
            _file(self._by_name, name.lower(), tool_id)
        for catalog in catalogs:
            self._catalogs[catalog.lower()] = catalog

    def named(
        self, text: str, row_of: Callable[[str], int | None], code_of: Callable[[str], int | None]
    ) -> Named:
        """What `text` names literally (empty arrays when nothing), as rows and catalog
        codes of the snapshot `row_of` and `code_of` answer for."""
        written = tokens(text)
        lowered = {word.lower() for word in written}
        words = written | lowered  # what a name's lookup key may equal
        ids: set[str] = set()
        codes: set[int] = set()
        for word in lowered:  # every key is lowercase
            ids.update(self._exact.get(word, ()))
            for tool_id in self._by_name.get(word, ()):
                if lookup_key(tool_id.partition("/")[2]) in words:
                    ids.add(tool_id)
            catalog = self._catalogs.get(word)
            if catalog is not None and lookup_key(catalog) in words:
                code = code_of(catalog)
                if code is not None:
                    codes.add(code)
        rows = {row for row in map(row_of, ids) if row is not None}
        if not rows and not codes:
            return NOTHING
        return Named(
            np.asarray(sorted(rows), dtype=np.int64), np.asarray(sorted(codes), dtype=np.int32)
        )


def _file(lookup: dict[str, tuple[str, ...]], key: str, tool_id: str) -> None:
    found = lookup.get(key, ())
    if tool_id not in found:
        lookup[key] = (*found, tool_id)


def _drop(lookup: dict[str, tuple[str, ...]], key: str, tool_id: str) -> None:
    found = lookup.get(key, ())
    if tool_id in found:
        rest = tuple(i for i in found if i != tool_id)
        if rest:
            lookup[key] = rest
        else:
            del lookup[key]
