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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from indexer.model import Tool
from indexer.naming import FUNCTION_NAME, plain_function_name

_MARKED = re.compile(r"[_\-.0-9]")
_CAMEL = re.compile(r"[a-z][A-Z]")
# Runs of identifier characters; a trailing separator is sentence punctuation ("use x.").
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-./:]*")
MIN_LENGTH = 3
V = TypeVar("V", tuple[Tool, ...], str)


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


# A tool as the lookup files it: the tool (its catalog and name) and its function-calling
# name when that is not the plain `catalog__tool` ("" when it is: `IndexedTool.spelling`).
Spelled = tuple[Tool, str]


class Literals:
    """Lookup from the names tools and catalogs are called by to the tools and catalogs.

    Keyed by names, not rows, so a snapshot that changes a few catalogs reuses the previous
    lookup and records those catalogs' tools over it (`spliced`), instead of filing every
    name again; rows are resolved per request. Every name is filed lowercased, without
    checking its shape; whether a name counts is decided for the few a request's words hit.

    Only tool names are filed, each with the tools that have it (the tool objects the
    snapshot holds: no string is made per tool). A full id (`catalog/tool`) and a plain
    function-calling name (`catalog__tool`) are split and looked up by their tool name; the
    few function names that are not plain (shortened, hashed: `indexer.naming`) are filed
    as they are. Filing every id and function name cost 740 MB at a million tools.

    A spliced lookup is layered: a full lookup (the base, never changed) under the keys the
    changes since touched, each with its whole current value (empty: gone). Copying the full
    lookup on every change cost 0.38 s at a million tools; the layer is copied instead, and
    folded into a new base once it outgrows a share of it.
    """

    def __init__(self, tools: Iterable[Spelled] = (), catalogs: Iterable[str] = ()) -> None:
        # Lowercased tool name -> tools; lowercased function name that is not plain ->
        # tools; lowercased catalog name -> name ("" in a layer: gone). Values are tuples:
        # lookups share them.
        self._by_name: dict[str, tuple[Tool, ...]] = {}
        self._hashed: dict[str, tuple[Tool, ...]] = {}
        self._catalogs: dict[str, str] = {}
        # The full lookup this one is a layer over (None: this one is full).
        self._base: Literals | None = None
        self._add_whole(tools)
        self._add((), catalogs)

    def spliced(
        self,
        removed: Iterable[Spelled],
        removed_catalogs: Iterable[str],
        added: Iterable[Spelled],
        added_catalogs: Iterable[str],
    ) -> Literals:
        """This lookup without `removed` (the very tool objects filed) and with `added`
        (this one is unchanged)."""
        copy = Literals.__new__(Literals)
        copy._base = self._base if self._base is not None else self
        layered = self._base is not None
        copy._by_name = dict(self._by_name) if layered else {}
        copy._hashed = dict(self._hashed) if layered else {}
        copy._catalogs = dict(self._catalogs) if layered else {}
        base = copy._base
        for tool, spelling in removed:
            _drop(copy._by_name, base._by_name, _lowered(tool.name), tool)
            if spelling:
                _drop(copy._hashed, base._hashed, _lowered(spelling), tool)
        for catalog in removed_catalogs:
            copy._catalogs[catalog.lower()] = ""
        copy._add(added, added_catalogs)
        return copy._folded() if copy._outgrown() else copy

    def _outgrown(self) -> bool:
        base = self._base
        if base is None:
            return False
        layer = len(self._by_name) + len(self._hashed) + len(self._catalogs)
        full = len(base._by_name) + len(base._hashed) + len(base._catalogs)
        return layer > max(LAYER_MIN, LAYER_SHARE * full)

    def _folded(self) -> Literals:
        """The same lookup as one full table set."""
        base = self._base
        assert base is not None
        full = Literals.__new__(Literals)
        full._base = None
        full._by_name = _merged(base._by_name, self._by_name)
        full._hashed = _merged(base._hashed, self._hashed)
        full._catalogs = _merged(base._catalogs, self._catalogs)
        return full

    def _add_whole(self, tools: Iterable[Spelled]) -> None:
        """Files `tools` into an empty full lookup (each key's tuple made once: a name that
        thousands of catalogs share would otherwise be copied once per tool)."""
        by_name: dict[str, list[Tool]] = {}
        hashed: dict[str, list[Tool]] = {}
        for tool, spelling in tools:
            by_name.setdefault(_lowered(tool.name), []).append(tool)
            if spelling:
                hashed.setdefault(_lowered(spelling), []).append(tool)
        self._by_name = {key: tuple(found) for key, found in by_name.items()}
        self._hashed = {key: tuple(found) for key, found in hashed.items()}

    def _add(self, tools: Iterable[Spelled], catalogs: Iterable[str]) -> None:
        # A full lookup is its own base: what its tables lack, nothing has.
        base = self._base or self
        for tool, spelling in tools:
            _file(self._by_name, base._by_name, _lowered(tool.name), tool)
            if spelling:
                _file(self._hashed, base._hashed, _lowered(spelling), tool)
        for catalog in catalogs:
            self._catalogs[catalog.lower()] = catalog

    def _tools(self, key: str) -> tuple[Tool, ...]:
        return _current(self._by_name, (self._base or self)._by_name, key, ())

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
        base = self._base or self
        # Whether a name is spelled in the request, once per name: many catalogs can hold a
        # tool of the same name (mirrors of one server, at a million tools hundreds of them).
        spelled: dict[str, bool] = {}
        for word in lowered:  # every key is lowercase
            ids.update(tool.id for tool in self._full_ids(word))
            ids.update(t.id for t in _current(self._hashed, base._hashed, word, ()))
            for tool in self._tools(word):
                name = tool.name
                found = spelled.get(name)
                if found is None:
                    found = spelled[name] = lookup_key(name) in words
                if found:
                    ids.add(tool.id)
            catalog = _current(self._catalogs, base._catalogs, word, "")
            if catalog and lookup_key(catalog) in words:
                code = code_of(catalog)
                if code is not None:
                    codes.add(code)
        rows = {row for row in map(row_of, ids) if row is not None}
        if not rows and not codes:
            return NOTHING
        return Named(
            np.asarray(sorted(rows), dtype=np.int64), np.asarray(sorted(codes), dtype=np.int32)
        )

    def _full_ids(self, word: str) -> Iterator[Tool]:
        """The tools whose id (`catalog/tool`) or plain function name (`catalog__tool`, the
        first `__` after the catalog: a catalog name holds none) is `word`, lowercased."""
        catalog, slash, name = word.partition("/")
        if slash:
            yield from (t for t in self._tools(name) if t.catalog.lower() == catalog)
        catalog, sep, name = word.partition("__")
        if sep:
            for tool in self._tools(name):
                if tool.catalog.lower() == catalog and _safe(tool):
                    yield tool


def _lowered(name: str) -> str:
    """`name` lowercased: the same object when it already is (most tool names are)."""
    lowered = name.lower()
    return name if lowered == name else lowered


def _safe(tool: Tool) -> bool:
    """Whether the tool's plain function name `<catalog>__<tool>` is a safe one, which
    `indexer.naming` gives it (rather than a shortened and hashed one, filed as it is)."""
    return FUNCTION_NAME.fullmatch(plain_function_name(tool.catalog, tool.name)) is not None


# A layer is folded into a new base past this many keys, or this share of the base's.
LAYER_MIN = 4096
LAYER_SHARE = 0.125


def _current(layer: dict[str, V], base: dict[str, V], key: str, empty: V) -> V:
    """`key`'s value in `layer` over `base` (`empty`: none, or gone)."""
    found = layer.get(key)
    return base.get(key, empty) if found is None else found


def _file(
    layer: dict[str, tuple[Tool, ...]], base: dict[str, tuple[Tool, ...]], key: str, tool: Tool
) -> None:
    found = _current(layer, base, key, ())
    if not any(held is tool for held in found):
        layer[key] = (*found, tool)


def _drop(
    layer: dict[str, tuple[Tool, ...]], base: dict[str, tuple[Tool, ...]], key: str, tool: Tool
) -> None:
    found = _current(layer, base, key, ())
    if any(held is tool for held in found):
        layer[key] = tuple(held for held in found if held is not tool)


def _merged(base: dict[str, V], layer: dict[str, V]) -> dict[str, V]:
    """`base` with `layer`'s keys set (an empty value: the key is gone)."""
    merged = dict(base)
    for key, value in layer.items():
        if value:
            merged[key] = value
        else:
            merged.pop(key, None)
    return merged
