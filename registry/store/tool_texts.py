"""Stored tools held by name and revision alone, their schemas read from the store when a
caller asks for them (decision 0081).

A restart makes one `StoredToolText` per stored tool and reads no schema: what a search reads
of every tool comes from its catalog's image (`registry.catalog_image`), so only GetSchema,
links, exports and a catalog's replacement read schemas, each one query. The last few thousand
read are remembered, parsed.

A tool is read at the revision it was held at, of the incarnation of its catalog it was held
at: a tool's revision is the one its content last changed in, and a catalog deleted and stored
anew (its revisions starting again at 1) is another incarnation, so the row read is the content
the snapshot held. Before this process replaces or deletes a catalog, it keeps the catalog's
stored JSON for the snapshots that still hold it (`CatalogTexts.keep`). What another replica
changed or deleted before this one caught up (an other revision, no row, another incarnation,
or a catalog deleted: `CatalogTexts.retire`) raises `ToolChanged`: the snapshot that named it
is older than the store, and asking again reaches the newer one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Protocol

import orjson

from indexer.errors import CapregError
from indexer.model import JsonObject, Tool, ToolLink

# Parsed tools remembered (the ones searches show and agents fetch are read again and again).
REMEMBERED = 4096
# A catalog past this many tools is read tool by tool, not whole (at most half of what is
# remembered, so a whole read does not push out every tool read before it).
WHOLE_CATALOG_READ = REMEMBERED // 2


class ToolChanged(CapregError):
    """The tool changed in the store, or went, after the snapshot that named it was made."""

    def __init__(self, tool_id: str) -> None:
        super().__init__(
            f"tool '{tool_id}' changed in the store after the answer that named it; "
            "ask again (search or GetSchema) to read its current version"
        )
        self.tool_id = tool_id


class TextReader(Protocol):
    """What a store answers about its tools' stored JSON."""

    def tool_text(self, catalog: str, name: str, revision: int, incarnation: int) -> str | None:
        """The stored JSON of the tool at that revision of that incarnation of its catalog;
        None when it is not stored so."""
        ...

    def catalog_texts(self, catalog: str, incarnation: int) -> list[tuple[str, int, str]]:
        """(name, revision, stored JSON) of every tool of the catalog, in one read; none
        when the catalog stored is another incarnation."""
        ...


# Tools share a few scope sets (most have none): one object per distinct set, not per tool.
_SCOPE_SETS: dict[frozenset[str], frozenset[str]] = {}


def _shared(scopes: Iterable[str]) -> frozenset[str]:
    wanted = frozenset(scopes)
    return _SCOPE_SETS.setdefault(wanted, wanted) if len(_SCOPE_SETS) < 65_536 else wanted


def tool_from_json(catalog: str, name: str, text: str) -> Tool:
    data = orjson.loads(text)
    return Tool(
        catalog=catalog,
        name=name,
        description=data["description"],
        input_schema=data["input_schema"],
        output_schema=data["output_schema"],
        annotations=data["annotations"],
        title=data["title"],
        tags=tuple(data["tags"]),
        scopes=_shared(data["scopes"]),
        examples=tuple(data["examples"]),
        links=tuple(
            ToolLink(rel=link["rel"], target_id=link["target"], arguments=link["arguments"])
            for link in data.get("links", ())
        ),
    )


class _Parsed:
    """The last REMEMBERED tools parsed, by (catalog's texts, name, revision)."""

    def __init__(self) -> None:
        self._tools: OrderedDict[tuple[CatalogTexts, str, int], Tool] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[CatalogTexts, str, int]) -> Tool | None:
        with self._lock:
            tool = self._tools.get(key)
            if tool is not None:
                self._tools.move_to_end(key)
            return tool

    def put(self, key: tuple[CatalogTexts, str, int], tool: Tool) -> None:
        with self._lock:
            self._tools[key] = tool
            self._tools.move_to_end(key)
            while len(self._tools) > REMEMBERED:
                self._tools.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._tools.clear()


PARSED = _Parsed()


class CatalogTexts:
    """Where one stored catalog's tools are read from: shared by its `StoredToolText`s."""

    __slots__ = ("catalog", "incarnation", "kept", "reader", "retired")

    def __init__(self, reader: TextReader, catalog: str, incarnation: int = 0) -> None:
        self.reader = reader
        self.catalog = catalog
        # Which life of the catalog's name these tools belong to (`StoredCatalog.incarnation`):
        # one deleted and stored anew, here or by another writer, is read as none of them.
        self.incarnation = incarnation
        # The catalog's stored JSON as it was before this process replaced or deleted it,
        # by (name, revision): snapshots made before serve it until they are let go.
        self.kept: dict[tuple[str, int], str] = {}
        self.retired = False

    def keep(self) -> None:
        """Before this process replaces or deletes the catalog: its tools as stored now are
        read (one query) and kept for the snapshots that still hold them, and the store is
        no longer read for them."""
        if not self.retired:
            self.kept = {
                (name, rev): text
                for name, rev, text in self.reader.catalog_texts(self.catalog, self.incarnation)
            }
            self.retired = True

    def retire(self) -> None:
        """The catalog was deleted (here or by another replica): the store is no longer read
        for its tools, which a catalog stored anew under its name could take the revisions
        of; what `keep` kept is still served."""
        self.retired = True

    def tool(self, name: str, revision: int) -> Tool:
        key = (self, name, revision)
        tool = PARSED.get(key)
        if tool is not None:
            return tool
        text = self.kept.get((name, revision))
        if text is None and not self.retired:
            text = self.reader.tool_text(self.catalog, name, revision, self.incarnation)
        # Checked again after a store read: a catalog deleted and stored anew, at the same
        # revisions, was retired before it was stored anew.
        if text is None or (self.retired and (name, revision) not in self.kept):
            raise ToolChanged(f"{self.catalog}/{name}")
        tool = tool_from_json(self.catalog, name, text)
        PARSED.put(key, tool)
        return tool

    def read_whole(self, wanted: Sequence[tuple[str, int]]) -> None:
        """Reads the catalog in one query and remembers the `wanted` (name, revision) found
        at their revisions (what is not found is read, and fails, one by one later)."""
        if self.retired or len(wanted) > WHOLE_CATALOG_READ:
            return
        rows = {
            (name, revision): text
            for name, revision, text in self.reader.catalog_texts(self.catalog, self.incarnation)
        }
        if self.retired:
            return
        for name, revision in wanted:
            text = rows.get((name, revision))
            if text is not None and PARSED.get((self, name, revision)) is None:
                PARSED.put((self, name, revision), tool_from_json(self.catalog, name, text))


class StoredToolText(Tool):
    """A stored tool held as its catalog, name and revision; its other fields are read from
    the store and parsed when first read (see the module)."""

    __slots__ = ("_revision", "_texts")
    _revision: int
    _texts: CatalogTexts

    def __init__(self, texts: CatalogTexts, name: str, revision: int) -> None:
        object.__setattr__(self, "catalog", texts.catalog)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_revision", revision)
        object.__setattr__(self, "_texts", texts)

    def parsed(self) -> Tool:
        return self._texts.tool(self.name, self._revision)

    def __eq__(self, other: object) -> bool:
        if (
            isinstance(other, StoredToolText)
            and other._texts is self._texts
            and other._revision == self._revision
        ):
            return other.name == self.name
        return self.parsed() == (other.parsed() if isinstance(other, StoredToolText) else other)

    __hash__ = None  # type: ignore[assignment]  # as a Tool: its schemas are dicts

    def __repr__(self) -> str:
        return f"StoredToolText(catalog={self.catalog!r}, name={self.name!r})"

    @property  # read from the store, not from a slot
    def description(self) -> str:
        return self.parsed().description

    @property
    def input_schema(self) -> JsonObject:
        return self.parsed().input_schema

    @property
    def output_schema(self) -> JsonObject | None:
        return self.parsed().output_schema

    @property
    def annotations(self) -> JsonObject:
        return self.parsed().annotations

    @property
    def title(self) -> str:
        return self.parsed().title

    @property
    def tags(self) -> tuple[str, ...]:
        return self.parsed().tags

    @property
    def scopes(self) -> frozenset[str]:
        return self.parsed().scopes

    @property
    def examples(self) -> tuple[str, ...]:
        return self.parsed().examples

    @property
    def links(self) -> tuple[ToolLink, ...]:
        return self.parsed().links


def read_ahead(tools: Iterable[Tool]) -> None:
    """Before every tool of `tools` is read: their catalogs' stored ones read in one query a
    catalog rather than one a tool."""
    wanted: dict[CatalogTexts, list[tuple[str, int]]] = {}
    for tool in tools:
        if isinstance(tool, StoredToolText):
            wanted.setdefault(tool._texts, []).append((tool.name, tool._revision))
    for texts, names in wanted.items():
        if len(names) > 1:
            texts.read_whole(names)


def _sources(tools: Iterable[Tool]) -> set[CatalogTexts]:
    return {tool._texts for tool in tools if isinstance(tool, StoredToolText)}


def keep(tools: Iterable[Tool]) -> None:
    """Before these stored tools' catalog is replaced or deleted here (`CatalogTexts.keep`)."""
    for texts in _sources(tools):
        texts.keep()


def retire(tools: Iterable[Tool]) -> None:
    """After these stored tools' catalog was deleted (`CatalogTexts.retire`)."""
    for texts in _sources(tools):
        texts.retire()
