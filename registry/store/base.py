"""What every store keeps and how the registry talks to one: the records, the errors and the
`Store` protocol that the SQLite and PostgreSQL stores both implement.

Embeddings are keyed by (model id, hash of the tool's document text), so unchanged tools are
never embedded twice and a restart embeds nothing. Every change is one transaction: a crash
leaves the old state or the new one, never a mix.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import orjson
from numpy.typing import NDArray

from indexer.errors import CapregError
from indexer.model import (
    Catalog,
    CatalogFormat,
    JsonObject,
    Tool,
    ToolLink,
    Transition,
    Workflow,
    WorkflowState,
)


class StoreError(CapregError):
    """The database cannot be used (wrong schema version, unreadable file)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredTool:
    tool: Tool
    function_name: str
    # The catalog revision in which this tool's content last changed.
    revision: int


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
    return json.dumps(data, ensure_ascii=False)


# Tools share a few scope sets (most have none): one object per distinct set, not per tool.
_SCOPE_SETS: dict[frozenset[str], frozenset[str]] = {}


def _shared(scopes: Iterable[str]) -> frozenset[str]:
    wanted = frozenset(scopes)
    return _SCOPE_SETS.setdefault(wanted, wanted) if len(_SCOPE_SETS) < 65_536 else wanted


def tool_from_json(catalog: str, name: str, text: str) -> Tool:
    # orjson: a restart parses every stored tool (1.9 s with json at 100k, 0.9 s with orjson).
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


@functools.lru_cache(maxsize=4096)
def _parsed(catalog: str, name: str, text: str) -> Tool:
    # The tools searches show and rank are read again and again; the rest are read rarely.
    return tool_from_json(catalog, name, text)


class StoredToolText(Tool):
    """A stored tool held as the JSON the store keeps, parsed when a field past its name is
    read (and the last few thousand parsed are remembered).

    A restart makes one of these per stored tool instead of parsing every schema: parsing
    was the largest part of loading a store (0.5 s at 100,000 tools), and parsed schemas
    about 1.8 KB of every tool held (docs/performance.md). What a search reads of every tool
    (its name, its document hash, tokens and scopes) comes from the catalog's image
    (`registry.catalog_image`), so only the tools a search shows or ranks are parsed."""

    __slots__ = ("_text",)
    _text: str

    def __init__(self, catalog: str, name: str, text: str) -> None:
        object.__setattr__(self, "catalog", catalog)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_text", text)

    def parsed(self) -> Tool:
        return _parsed(self.catalog, self.name, self._text)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredToolText) and other._text == self._text:
            return other.catalog == self.catalog and other.name == self.name
        return self.parsed() == (other.parsed() if isinstance(other, StoredToolText) else other)

    __hash__ = None  # type: ignore[assignment]  # as a Tool: its schemas are dicts

    def __repr__(self) -> str:
        return f"StoredToolText(catalog={self.catalog!r}, name={self.name!r})"

    @property  # read from the stored JSON, not from a slot
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
    catalog_rows: Iterable[Sequence[Any]], tool_rows: Iterable[Sequence[Any]]
) -> list[StoredCatalog]:
    """Catalogs from their rows (name, title, description, version, format, default scopes
    as JSON, revision, source digest, workflows as JSON, image or None) and their tools' rows
    (catalog, name, data, function name, revision, position; each catalog's rows in any
    order, in position order or not): the same for every backend."""
    by_catalog: dict[str, list[tuple[int, StoredTool]]] = {}
    # One string per catalog name, not one per tool row.
    names: dict[str, str] = {}
    shuffled: set[str] = set()
    for catalog, name, data, function_name, revision, position in tool_rows:
        catalog_name = names.setdefault(str(catalog), str(catalog))
        placed = by_catalog.setdefault(catalog_name, [])
        if placed and position < placed[-1][0]:
            shuffled.add(catalog_name)
        placed.append(
            (
                position,
                StoredTool(
                    tool=StoredToolText(catalog_name, str(name), str(data)),
                    function_name=str(function_name),
                    revision=int(revision),
                ),
            )
        )
    for catalog_name in shuffled:
        by_catalog[catalog_name].sort(key=lambda pair: pair[0])
    result = []
    for row in catalog_rows:
        name, title, description, version, fmt, scopes, revision, digest, flows, image = row
        tools = tuple(tool for _, tool in by_catalog.get(str(name), ()))
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
            )
        )
    return result


class StaleCatalog(CapregError):
    """The catalog changed in the store since this process read it (another replica wrote
    it): catch up and decide again."""

    def __init__(self, name: str, expected: int, stored: int) -> None:
        super().__init__(
            f"catalog {name!r} is at revision {stored} in the store, not {expected}; "
            "another writer changed it"
        )
        self.name = name
        self.stored = stored


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
        image: bytes = b"",
    ) -> int:
        """Stores `catalog` in place of any previous version, with the vectors it adds and its
        image, in one transaction; returns the new generation. With `replaces`, the stored
        revision must still be that one (0: none stored), else `StaleCatalog` and nothing
        changes."""
        ...

    def put_images(self, images: Sequence[tuple[str, int, bytes]]) -> int:
        """Stores each (catalog name, revision, image) whose revision is still the stored one,
        in one transaction (no generation change); returns how many were."""
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
