"""One catalog's share of a snapshot, prepared once per catalog revision.

A snapshot is its catalogs' segments side by side. A segment holds what the snapshot would
otherwise recompute for every tool on every change: the tools in id order, their vectors and
stable vector slots, their BM25 postings and their scope-set codes. (What their vectors sum to
is the snapshot's: `indexer.retrieval.assembly`.)
Segments made by one `SegmentSpace` share term ids, scope-set codes and slots, so a new
snapshot can be spliced from the previous one and the changed catalogs' segments alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Protocol, overload

import numpy as np
from numpy.typing import NDArray

from indexer.model import Tool, ToolLink
from indexer.naming import spelled_out
from indexer.retrieval.features import words_of
from indexer.retrieval.lexical import Postings, Tokenised, Vocabulary
from indexer.retrieval.tool_facts import ToolFacts

# Past this many slots per live vector, a full build renumbers the slots (a long history of
# changes would otherwise grow the arena without bound).
MAX_SLOT_RATIO = 2


@dataclass(kw_only=True, frozen=True)
class IndexedTool:
    """A tool with what serving it needs: scopes, function name and catalog facts."""

    tool: Tool
    required_scopes: frozenset[str]
    catalog_title: str
    catalog_version: str
    catalog_revision: int
    # Declared and derived (indexer/derived_links.py), to any tool: who may follow which is
    # decided when a schema is read (registry.snapshot.Snapshot.schemas). Either the links, or
    # what gives them by tool name when first read (a catalog's links are derived lazily:
    # indexer.derived_links.CatalogLinks).
    link_source: tuple[ToolLink, ...] | Callable[[str], tuple[ToolLink, ...]] = ()
    # What a search reads of the tool besides its name, as its catalog's image gives it (a
    # search then parses no schema); None: derived from the tool when first read.
    known_facts: ToolFacts | None = None
    # The function name when it is not the plain `<catalog>__<tool>` (`indexer.naming`), else
    # "": derived when asked for, not held.
    spelling: str = ""

    @property
    def id(self) -> str:
        return self.tool.id

    @property
    def function_name(self) -> str:
        return spelled_out(self.tool.catalog, self.tool.name, self.spelling)

    @cached_property
    def facts(self) -> ToolFacts:
        known = self.known_facts
        return ToolFacts.of(self.tool) if known is None else known

    @cached_property
    def links(self) -> tuple[ToolLink, ...]:
        source = self.link_source
        return source if isinstance(source, tuple) else source(self.tool.name)

    @cached_property
    def name_words(self) -> frozenset[str]:
        """The words of the tool's name (read by the learned stage)."""
        return words_of(self.tool.name)

    @cached_property
    def input_names(self) -> frozenset[str]:
        return self.facts.input_names

    @cached_property
    def output_names(self) -> frozenset[str]:
        return self.facts.output_names

    @property
    def summary(self) -> str:
        """The description's first sentence (`indexer.retrieval.document.summary`)."""
        return self.facts.summary

    @property
    def destructive(self) -> bool:
        """Whether calling it may destroy something (`indexer.retrieval.effects`)."""
        return self.facts.destructive


class NamedTool(Protocol):
    """What names a tool before it is served: the tool and its function name's spelling
    (a stored tool, or an `IndexedTool`)."""

    @property
    def tool(self) -> Tool: ...

    @property
    def spelling(self) -> str: ...


# A catalog's tools as the index serves them, in the catalog's own order: made, or what makes
# them when a segment's are first read (a catalog from the store makes each entry when it is
# first read: `registry.indexing.CatalogEntries`).
EntrySource = Sequence[IndexedTool] | Callable[[], Sequence[IndexedTool]]


class InOrder(Sequence[IndexedTool]):
    """A catalog's entries in a segment's row order, each read from the catalog's when asked
    for (a view: nothing is made for the rows no one reads)."""

    def __init__(self, made: Sequence[IndexedTool], order: tuple[int, ...]) -> None:
        self._made = made
        self._order = order

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, row: int) -> IndexedTool: ...
    @overload
    def __getitem__(self, row: slice) -> Sequence[IndexedTool]: ...
    def __getitem__(self, row: int | slice) -> IndexedTool | Sequence[IndexedTool]:
        if isinstance(row, slice):
            return [self._made[r] for r in self._order[row]]
        return self._made[self._order[row]]


@dataclass(kw_only=True, frozen=True, eq=False)
class Segment:
    """One catalog's tools (sorted by id) and everything a snapshot needs about them.

    Its `entries` are made when first read: a start-up makes a segment for every catalog,
    and a search reads the entries of the few tools it ranks (without a million
    `IndexedTool`s a start-up at a million tools took 7% less: decision 0091; a tool's
    entry made alone, not its whole catalog's: decision 0092)."""

    name: str
    # Row-aligned: the tools' names, their document hashes, and the slots holding their
    # vectors in the space's arena (also the ids the vector index knows them by).
    tools: tuple[NamedTool, ...]
    keys: tuple[str, ...]
    slots: NDArray[np.int64]
    postings: Postings
    scope_codes: NDArray[np.int32]
    # What `entries` are made from, in the catalog's order, and the catalog's row of each
    # of this segment's rows (None: the same order).
    entry_source: EntrySource
    order: tuple[int, ...] | None = None

    def __len__(self) -> int:
        return len(self.keys)

    @cached_property
    def entries(self) -> Sequence[IndexedTool]:
        """The tools as the index serves them, in row order (made on first read: the source
        is called, and a source that makes each entry when read makes only those read)."""
        source = self.entry_source
        made = source() if callable(source) else source
        return made if self.order is None else InOrder(made, self.order)

    def moved(self, slots: NDArray[np.int64]) -> Segment:
        """This segment with its vectors at `slots` (entries already made are kept)."""
        moved = replace(self, slots=slots)
        if "entries" in self.__dict__:
            moved.__dict__["entries"] = self.__dict__["entries"]
        return moved

    @property
    def sort_key(self) -> str:
        # Rows are in tool-id order: `<catalog>/<tool>` sorts by the catalog name followed
        # by "/" (so "ab-c/x" comes before "ab/y"), then by tool name.
        return self.name + "/"

    @cached_property
    def rows(self) -> dict[str, int]:
        """Tool name -> row within the segment (keyed by the names the tools hold: an id
        string per tool was 140 bytes of every tool held)."""
        return {named.tool.name: row for row, named in enumerate(self.tools)}


# A segment's vectors, one row per tool: a matrix, or the rows apart (a start-up reads each
# vector on its own; the arena is the first place they are written together).
Rows = NDArray[np.float32] | Sequence[NDArray[np.float32]]


@dataclass(frozen=True)
class SegmentSource:
    """What a segment is made from: `matrix`, `keys` and the tokenised documents follow
    the catalog's tools. `entries` are the tools as served, or what makes them when first
    read; then `tools` names them and `scopes` gives their required scopes meanwhile."""

    name: str
    entries: EntrySource
    matrix: Rows
    keys: Sequence[str]
    tokens: Tokenised
    tools: Sequence[NamedTool] | None = None
    scopes: Sequence[frozenset[str]] | None = None

    def named(self) -> tuple[Sequence[NamedTool], Sequence[frozenset[str]]]:
        """Each tool's name and required scopes, without making its entry."""
        entries = self.entries
        if self.tools is not None and self.scopes is not None:
            return self.tools, self.scopes
        if callable(entries):
            raise ValueError(f"{self.name}: entries made later need their tools and scopes")
        return entries, [entry.required_scopes for entry in entries]


# Past this many vectors the arena holds them as float16: half the bytes of the largest thing a
# tool costs (768 against 1,536 bytes). Every labeled set of `make eval` is far below it (so its
# figures are those of float32 vectors), and above it searches run on IVF lists of coarser
# codes, rescored from these vectors (decisions 0079, 0080).
HALF_PRECISION_ROWS = 65_536


def arena_dtype(rows: int) -> type[np.floating[Any]]:
    """The element type of an arena that holds `rows` vectors."""
    return np.float16 if rows > HALF_PRECISION_ROWS else np.float32


class VectorArena:
    """Every segment's vectors, each written once at its slot and never moved.

    A snapshot reads its rows through their slots, so a new snapshot costs no new copy of
    the vectors: on this kind of machine faulting in a fresh 150 MB matrix (100k tools) took
    longer than the rest of a one-catalog change together. Growing replaces the array with a
    larger copy; snapshots built before keep the array they were built on. It grows with
    room for half as many again: rows not yet written are zero pages the system has not
    handed out, so the room costs no resident memory, and the changes after a start-up write
    into it instead of copying every vector (3.4 s at a million tools). Past
    HALF_PRECISION_ROWS the vectors are float16 (`arena_dtype`); readers get float32 rows
    (`VectorIndex.rows`)."""

    def __init__(
        self,
        dimension: int,
        capacity: int = 1024,
        *,
        holding: int = 0,
        dtype: type[np.floating[Any]] | None = None,
    ) -> None:
        """Room for `capacity` vectors, typed for `holding` of them (`arena_dtype`), or
        always `dtype` when given (the catalogs' centroids: `indexer.retrieval.centroids`)."""
        self._dtype = dtype
        self._data: NDArray[np.floating[Any]] = np.zeros(
            (capacity, dimension), dtype=self._dtype_for(holding)
        )
        self._used = 0

    def _dtype_for(self, rows: int) -> type[np.floating[Any]]:
        return self._dtype or arena_dtype(rows)

    @property
    def data(self) -> NDArray[np.floating[Any]]:
        """The current array (rows past the last slot are unused)."""
        return self._data

    @property
    def used(self) -> int:
        return self._used

    def reserve(self, rows: int) -> None:
        """Room for `rows` more vectors, in one allocation."""
        needed = self._used + rows
        if needed > len(self._data):
            size = max(needed + needed // 2, len(self._data) * 3 // 2)
            grown = np.zeros((size, self._data.shape[1]), dtype=self._dtype_for(needed))
            grown[: self._used] = self._data[: self._used]
            self._data = grown

    def claim(self, rows: int) -> NDArray[np.int64]:
        """The next `rows` free slots, taken for the caller to write through `data`."""
        self.reserve(rows)
        slots = np.arange(self._used, self._used + rows, dtype=np.int64)
        self._used += rows
        return slots

    def append_parts(self, parts: Sequence[tuple[Rows, Sequence[int]]]) -> list[NDArray[np.int64]]:
        """Writes each part's rows, in its order (`rows[order]`), at the next free slots,
        one part after another, straight into the arena; returns each part's slots
        (consecutive)."""
        self.reserve(sum(len(order) for _, order in parts))
        made = []
        for rows, order in parts:
            start, end = self._used, self._used + len(order)
            if len(order):
                target = self._data[start:end]
                if isinstance(rows, np.ndarray):
                    index = np.asarray(order, dtype=np.int64)
                    if rows.dtype == target.dtype:
                        np.take(rows, index, axis=0, out=target)
                    else:
                        target[...] = rows[index]
                else:
                    # One call for the part's rows, written through the flat view (np.stack
                    # made a view of every row first: 3.3 of 11 s of segments at a million).
                    np.concatenate([rows[row] for row in order], out=target.reshape(-1))
            made.append(np.arange(start, end, dtype=np.int64))
            self._used = end
        return made

    def append(self, vectors: NDArray[np.floating[Any]]) -> NDArray[np.int64]:
        """Writes `vectors` at the next free slots and returns those slots."""
        self.reserve(len(vectors))
        needed = self._used + len(vectors)
        self._data[self._used : needed] = vectors
        slots = np.arange(self._used, needed, dtype=np.int64)
        self._used = needed
        return slots


class SegmentSpace:
    """Makes segments that fit together: one vocabulary, one numbering of scope sets, and
    vector slots that are never reused while a snapshot may still hold them."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self.vocabulary: Vocabulary = {}
        self._scope_codes: dict[frozenset[str], int] = {}
        self._scope_sets: list[frozenset[str]] = []
        self._arena = VectorArena(dimension)
        # Document hash -> a slot holding its vector: the registry's one in-memory copy of
        # each document's vector is here (see `vector`), not beside the arena.
        self._slot_of: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def scope_sets(self) -> tuple[frozenset[str], ...]:
        """Every scope set ever coded, by code."""
        return tuple(self._scope_sets)

    @property
    def vectors(self) -> NDArray[np.floating[Any]]:
        """The arena every slot of this space's segments points into (see `VectorArena`):
        float32, or float16 past HALF_PRECISION_ROWS."""
        return self._arena.data

    def vector(self, key: str) -> NDArray[np.float32] | None:
        """The vector of document hash `key` when a segment of this space holds it."""
        with self._lock:
            slot = self._slot_of.get(key)
            return None if slot is None else self._arena.data[slot].astype(np.float32)

    def held_keys(self) -> list[str]:
        """The document hashes whose vectors segments of this space hold."""
        with self._lock:
            return list(self._slot_of)

    def holds(self, key: str) -> bool:
        """Whether a segment of this space holds the vector of document hash `key`."""
        return key in self._slot_of

    def segment(
        self,
        name: str,
        entries: Sequence[IndexedTool],
        matrix: NDArray[np.float32],
        keys: Sequence[str],
        documents: Sequence[str],
    ) -> Segment:
        """A segment for catalog `name`; `matrix`, `keys` and `documents` follow `entries`."""
        tokens = Tokenised.of(documents)
        return self.segments([SegmentSource(name, entries, matrix, keys, tokens)])[0]

    def segments(self, sources: Sequence[SegmentSource]) -> list[Segment]:
        """A segment for each source, their postings made together (see `Postings.of_many`)."""
        ordered = []
        placed = []
        for source in sources:
            tools, scopes = source.named()
            if not (len(tools) == len(source.matrix) == len(source.keys) == len(source.tokens)):
                raise ValueError("one vector, key and document per tool is required")
            # Tool-id order: within one catalog, the names' order (no id string is built).
            order = sorted(range(len(tools)), key=lambda row: tools[row].tool.name)
            ordered.append((source, tools, scopes, order))
            place = np.empty(len(order), dtype=np.int64)
            place[order] = np.arange(len(order), dtype=np.int64)
            placed.append((source.tokens, place))
        with self._lock:
            postings = Postings.of_many(placed, self.vocabulary)
            # Every new vector written once, straight to its slot: a start-up makes thousands
            # of small segments, and a copy per step added up (a million tools: 1.5 GB each).
            slot_parts = self._arena.append_parts([(s.matrix, o) for s, _, _, o in ordered])
            made = []
            code = self._code
            for (source, tools, scopes, order), part, slots in zip(
                ordered, postings, slot_parts, strict=True
            ):
                keys = tuple(source.keys[row] for row in order)
                self._slot_of.update(zip(keys, slots.tolist(), strict=True))
                made.append(
                    Segment(
                        name=source.name,
                        tools=tuple(tools[row] for row in order),
                        keys=keys,
                        slots=slots,
                        postings=part,
                        scope_codes=np.asarray([code(scopes[row]) for row in order], np.int32),
                        entry_source=source.entries,
                        order=None if order == list(range(len(order))) else tuple(order),
                    )
                )
        return made

    def _code(self, scopes: frozenset[str]) -> int:
        code = self._scope_codes.get(scopes)
        if code is None:
            code = self._scope_codes[scopes] = len(self._scope_sets)
            self._scope_sets.append(scopes)
        return code

    def needs_renumbering(self, live: int) -> bool:
        """Whether slots have run far ahead of the `live` vectors (see `renumbered`)."""
        return self._arena.used > MAX_SLOT_RATIO * max(live, 1024)

    def renumbered(self, segments: Sequence[Segment]) -> list[Segment]:
        """`segments` with their vectors copied into a new arena, in order, for a full build
        that nothing splices from (earlier snapshots keep the old arena). Documents no longer
        in any segment are forgotten (`vector` answers None for them)."""
        with self._lock:
            old = self._arena.data
            live = sum(map(len, segments))
            self._arena = VectorArena(self.dimension, max(live + live // 2, 1024), holding=live)
            moved = [segment.moved(self._arena.append(old[segment.slots])) for segment in segments]
            self._slot_of = {
                key: slot
                for segment in moved
                for key, slot in zip(segment.keys, segment.slots.tolist(), strict=True)
            }
            return moved
