"""What every store keeps and how the registry talks to one: the records, the errors and the
`Store` protocol that the SQLite and PostgreSQL stores both implement.

Embeddings are keyed by (model id, hash of the tool's document text), so unchanged tools are
never embedded twice and a restart embeds nothing. Every change is one transaction: a crash
leaves the old state or the new one, never a mix.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np
import orjson
from numpy.typing import NDArray

from indexer.errors import CapregError
from indexer.model import (
    Catalog,
    CatalogFormat,
    Tool,
    Transition,
    Workflow,
    WorkflowState,
)
from indexer.naming import spelled_out, spelling
from registry.store.tool_texts import (
    CatalogTexts,
    StoredToolText,
    TextReader,
    ToolChanged,
    tool_from_json,
)

__all__ = ["StoredToolText", "ToolChanged", "tool_from_json"]


def is_postgres(location: str) -> bool:
    """Whether a store location is a PostgreSQL DSN (otherwise it is a SQLite file)."""
    return location.startswith(("postgresql://", "postgres://"))


class StoreError(CapregError):
    """The database cannot be used (wrong schema version, unreadable file)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredTool:
    tool: Tool
    # The function name when it is not the plain `<catalog>__<tool>`, else "" (the stores
    # read it so): a plain name is derived when asked for, not held, a string a tool less.
    spelling: str
    # The catalog revision in which this tool's content last changed.
    revision: int

    @classmethod
    def named(cls, tool: Tool, function_name: str, revision: int) -> StoredTool:
        return cls(
            tool=tool, spelling=spelling(tool.catalog, tool.name, function_name), revision=revision
        )

    @property
    def function_name(self) -> str:
        return spelled_out(self.tool.catalog, self.tool.name, self.spelling)


@dataclass(frozen=True, kw_only=True)
class StoredCatalog:
    """A catalog row and its tools, in registration order."""

    catalog: Catalog
    revision: int
    tools: tuple[StoredTool, ...]
    # What the catalog was last registered from (see Writer.register); "" when unknown.
    source_digest: str = ""
    # What its segment is made from besides tools and vectors (`registry.catalog_image`),
    # as stored with this revision; empty when none was.
    image: bytes = b""
    # Which life of the name this is: the generation that stored it where no catalog of the
    # name was (0 for catalogs stored before incarnations were). A catalog deleted and
    # stored anew starts again at revision 1, so its tools' (name, revision) can repeat a
    # deleted tool's; the incarnation tells them apart (`registry.store.tool_texts`).
    incarnation: int = 0


def tool_to_json(tool: Tool) -> str:
    # Key order inside schemas is kept as registered: GetSchema returns what was given.
    data: dict[str, Any] = {
        "description": tool.description,
        "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
        "annotations": tool.annotations,
        "title": tool.title,
        "tags": list(tool.tags),
        "scopes": sorted(tool.scopes),
        "examples": list(tool.examples),
    }
    # Declared links only (derived ones are recomputed from the catalog on load); the key is
    # left out when there are none, as rows written before links existed have it.
    if tool.links:
        data["links"] = [link.to_json() for link in tool.links]
    try:
        # orjson keeps key order too, and is the faster writer (tool-rows-orjson-100k.md).
        return orjson.dumps(data).decode()
    except TypeError:  # what orjson refuses (integers past 64 bits) the json module writes
        return json.dumps(data, ensure_ascii=False)


def workflows_to_json(workflows: Sequence[Workflow]) -> str:
    return json.dumps([w.to_json() for w in workflows], ensure_ascii=False)


def workflows_from_json(text: str) -> tuple[Workflow, ...]:
    """Workflows as `workflows_to_json` wrote them (validated when they were registered)."""
    return tuple(
        Workflow(
            name=data["name"],
            title=data.get("title", ""),
            description=data.get("description", ""),
            initial=data["initial"],
            states=tuple(
                WorkflowState(
                    name=name,
                    description=state.get("description", ""),
                    terminal=state.get("terminal", False),
                )
                for name, state in data["states"].items()
            ),
            transitions=tuple(
                Transition(
                    source=t["from"],
                    tool=t["tool"],
                    target=t["to"],
                    scopes=frozenset(t.get("scopes", ())),
                    when=t.get("when", {}),
                )
                for t in data["transitions"]
            ),
        )
        for data in orjson.loads(text)
    )


def stored_catalogs(
    catalog_rows: Iterable[Sequence[Any]], tool_rows: Iterable[Sequence[Any]], reader: TextReader
) -> list[StoredCatalog]:
    """Catalogs from their rows (name, title, description, version, format, default scopes
    as JSON, revision, source digest, workflows as JSON, image or None, incarnation) and their
    tools' rows (catalog, name, spelling, revision, position; each catalog's rows in any order, in
    position order or not), the tools' JSON left in the store for `reader` to read when asked
    (`registry.store.tool_texts`): the same for every backend. The spelling is the function
    name as `StoredTool.spelling` holds it, "" when plain, computed by the database
    (`CASE WHEN function_name = catalog || '__' || name THEN '' ELSE function_name END`), so a
    load neither receives nor holds a string per tool for it."""
    by_catalog: dict[str, list[tuple[int, StoredTool]]] = {}
    # One object per catalog, not one per tool row.
    texts: dict[str, CatalogTexts] = {}
    # One int object per revision number, not one per tool row.
    revisions: dict[int, int] = {}
    shuffled: set[str] = set()
    for catalog, name, spelled, revision, position in tool_rows:
        source = texts.get(catalog)
        if source is None:
            source = texts[catalog] = CatalogTexts(reader, str(catalog))
        placed = by_catalog.setdefault(source.catalog, [])
        if placed and position < placed[-1][0]:
            shuffled.add(source.catalog)
        held = revisions.setdefault(revision, int(revision))
        placed.append(
            (
                position,
                StoredTool(
                    tool=StoredToolText(source, str(name), held),
                    spelling=str(spelled),
                    revision=held,
                ),
            )
        )
    for catalog_name in shuffled:
        by_catalog[catalog_name].sort(key=lambda pair: pair[0])
    result = []
    for row in catalog_rows:
        name, title, description, version, fmt, scopes, revision, digest, flows, image, life = row
        tools = tuple(tool for _, tool in by_catalog.get(str(name), ()))
        source = texts.get(str(name))
        if source is not None:
            source.incarnation = int(life)
        catalog = Catalog(
            name=str(name),
            description=str(description),
            tools=tuple(t.tool for t in tools),
            title=str(title),
            version=str(version),
            default_scopes=frozenset(orjson.loads(str(scopes))),
            format=CatalogFormat(str(fmt)),
            workflows=workflows_from_json(str(flows)),
        )
        result.append(
            StoredCatalog(
                catalog=catalog,
                revision=int(revision),
                tools=tools,
                source_digest=str(digest),
                image=bytes(image) if image else b"",
                incarnation=int(life),
            )
        )
    return result


def left_in_store(stored: StoredCatalog, reader: TextReader) -> StoredCatalog:
    """`stored`, just written to the store `reader` reads, with its tools held by name and
    revision like a loaded catalog's: a registry that registered a catalog holds no more of
    it than one that loaded it (`registry.store.tool_texts`)."""
    texts = CatalogTexts(reader, stored.catalog.name, stored.incarnation)
    tools = tuple(
        StoredTool(
            tool=StoredToolText(texts, held.tool.name, held.revision),
            spelling=held.spelling,
            revision=held.revision,
        )
        for held in stored.tools
    )
    return replace(
        stored, catalog=replace(stored.catalog, tools=tuple(t.tool for t in tools)), tools=tools
    )


class StaleCatalog(CapregError):
    """The catalog changed in the store since this process read it (another replica wrote
    it): catch up and decide again."""

    def __init__(self, name: str, expected: int, stored: int, *, anew: bool = False) -> None:
        super().__init__(
            f"catalog {name!r} was deleted and stored anew by another writer (now at revision "
            f"{stored})"
            if anew
            else f"catalog {name!r} is at revision {stored} in the store, not {expected}; "
            "another writer changed it"
        )
        self.name = name
        self.stored = stored


# The share of a model's stored vectors past which a read passes over them (`reads_most`).
SCAN_SHARE = 0.5


def reads_most(wanted: int, stored: int) -> bool:
    """Whether a read of `wanted` vectors of the `stored` under a model (a start-up) should
    pass over the model's rows once instead of looking each up (both backends)."""
    return wanted >= stored * SCAN_SHARE


def ivf_lists_row(lists: Mapping[str, int]) -> tuple[str, bytes]:
    """A batch of document hash -> IVF list as one stored row: the hashes joined by newlines
    (hex digests hold none) and the lists as little-endian 32-bit integers, in that order."""
    return "\n".join(lists), np.fromiter(lists.values(), "<i4", len(lists)).tobytes()


def ivf_lists_of(rows: Iterable[tuple[str, bytes]]) -> dict[str, int]:
    """Document hash -> IVF list from rows `ivf_lists_row` made (a later row wins)."""
    found: dict[str, int] = {}
    for keys, lists in rows:
        if keys:
            found.update(zip(keys.split("\n"), np.frombuffer(lists, "<i4").tolist(), strict=True))
    return found


def check_replaced(name: str, replaces: int, incarnation: int, row: Sequence[Any] | None) -> None:
    """Raises `StaleCatalog` unless the stored catalog (`row`: its revision and incarnation;
    None when none is stored) is the one a change was decided against: revision `replaces`
    (0: none stored) of `incarnation`."""
    stored = int(str(row[0])) if row is not None else 0
    if stored != replaces:
        raise StaleCatalog(name, replaces, stored)
    if row is not None and int(str(row[1])) != incarnation:
        raise StaleCatalog(name, replaces, stored, anew=True)


@dataclass(frozen=True, kw_only=True)
class Changes:
    """What changed in a store after some generation (see PostgresStore.changes_since)."""

    changed: list[StoredCatalog]
    deleted: list[str]
    generation: int


class Store(Protocol):
    """Catalogs, tools, embeddings, IVF partitions and the generation, kept durably."""

    # Where the store is, safe to log (no password).
    location: str

    def close(self) -> None: ...

    def generation(self) -> int:
        """The generation of the last stored change (0 for an empty store)."""
        ...

    def catalogs(self) -> list[StoredCatalog]:
        """Every stored catalog with its tools, by name (used at start-up)."""
        ...

    def tool_text(self, catalog: str, name: str, revision: int, incarnation: int) -> str | None:
        """The stored JSON of the tool at that revision of that incarnation of its catalog
        (`StoredCatalog.incarnation`); None when it is not stored so."""
        ...

    def catalog_texts(self, catalog: str, incarnation: int) -> list[tuple[str, int, str]]:
        """(name, revision, stored JSON) of every tool of the catalog, in one read; none
        when the catalog stored is another incarnation."""
        ...

    def embeddings(self, model: str, doc_hashes: Iterable[str]) -> dict[str, NDArray[np.float32]]:
        """Stored vectors for whichever of `doc_hashes` have one under `model`."""
        ...

    def put_embeddings(self, model: str, vectors: Mapping[str, NDArray[np.float32]]) -> None: ...

    def partition(self, model: str) -> tuple[NDArray[np.float32], int] | None:
        """The stored IVF list centroids for `model` and the corpus size they were trained on."""
        ...

    def put_partition(
        self, model: str, centroids: NDArray[np.float32], trained_on: int
    ) -> None: ...

    def ivf_lists(self, model: str, partition: str) -> dict[str, int]:
        """Document hash -> IVF list of every vector of `model` stored as assigned under the
        partition named `partition` (`Partition.digest`)."""
        ...

    def put_ivf_lists(self, model: str, partition: str, lists: Mapping[str, int]) -> None:
        """Stores each document's IVF list under that partition, in place of any other."""
        ...

    def replace_catalog(
        self,
        catalog: Catalog,
        revision: int,
        tools: Iterable[StoredTool],
        model: str,
        new_vectors: Mapping[str, NDArray[np.float32]],
        *,
        source_digest: str = "",
        replaces: int | None = None,
        incarnation: int = 0,
        image: bytes = b"",
    ) -> int:
        """Stores `catalog` in place of any previous version, with the vectors it adds and its
        image, in one transaction; returns the new generation. With `replaces`, the stored
        revision must still be that one (0: none stored), and a replaced catalog still be
        `incarnation`, else `StaleCatalog` and nothing changes. A catalog stored where none
        of its name was takes the returned generation as its incarnation; a replaced one
        keeps its own."""
        ...

    def put_images(self, images: Sequence[tuple[str, int, int, bytes]]) -> int:
        """Stores each (catalog name, revision, incarnation, image) whose revision and
        incarnation are still the stored ones, in one transaction (no generation change);
        returns how many were."""
        ...

    def set_source_digest(self, name: str, digest: str) -> None:
        """Records another source that gives the same catalog (no generation change)."""
        ...

    def delete_catalog(self, name: str) -> int | None:
        """Removes the catalog and its tools; returns the new generation, or None if absent."""
        ...


@runtime_checkable
class SharedStore(Store, Protocol):
    """A store several replicas write: each can ask what the others changed."""

    def changes_since(self, generation: int) -> Changes:
        """The catalogs stored and the names deleted after `generation`, and the generation
        they bring the caller to, from one snapshot of the store."""
        ...

    def wait_for_change(self, timeout: float) -> bool:
        """Waits up to `timeout` seconds for another change to be committed; True when one
        was announced (False also after a lost connection: the caller checks anyway)."""
        ...
