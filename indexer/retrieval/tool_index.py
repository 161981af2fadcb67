"""An immutable snapshot of every registered tool: its rows, vectors, BM25 statistics and
catalog arrays, who may see which rows, and the plain searches (by meaning, by words).

A new snapshot is made for every catalog change (spliced from the previous one and the changed
catalogs' segments, see `assembly`) and swapped in whole, so a search always sees one
consistent generation. How a hybrid search blends and reorders these rows is not the index's
business: `pipeline` ranks over it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.array_bm25 import ArrayBM25
from indexer.retrieval.assembly import Assembly, assemble
from indexer.retrieval.centroids import Centroids
from indexer.retrieval.lexical import LexicalIndex, protocol_tool_text
from indexer.retrieval.literal import Named
from indexer.retrieval.per_row import PerRow, tools_of
from indexer.retrieval.scaling import Scaling
from indexer.retrieval.segment import IndexedTool, Segment, SegmentSpace
from indexer.retrieval.suggestions import close_ids
from indexer.retrieval.vector_index import Partition, VectorIndex
from indexer.retrieval.view import View, build_view

# Which text of each tool BM25 reads (see ToolIndex.lexical).
LexicalText = Literal["protocol", "document"]
# Decides whether a caller may see a tool, given the tool's required scopes.
Visibility = Callable[[frozenset[str]], bool]
# Views cached per snapshot (one per distinct visibility seen); past it the cache restarts.
MAX_VIEWS = 256


__all__ = ["Eligible", "Hit", "IndexedTool", "ToolIndex", "Visibility", "everything"]


def everything(_required: frozenset[str]) -> bool:
    return True


@dataclass(kw_only=True, frozen=True)
class Hit:
    entry: IndexedTool
    # What the ranking ordered by (cosine for dense, BM25 for lexical, the blend for hybrid).
    score: float
    # Cosine similarity of the request and the tool's document (NaN when not computed).
    similarity: float = float("nan")


@dataclass(kw_only=True, frozen=True)
class Eligible:
    """Where a search looks: the rows it may return (the caller's, narrowed to some catalogs
    or tools), and the view its scores are scaled over (every row the caller sees, so a
    filter never moves a score)."""

    view: View
    rows: NDArray[np.bool_]

    @classmethod
    def whole(cls, view: View) -> Eligible:
        """Every row of `view`."""
        return cls(view=view, rows=view.mask.copy())


class ToolIndex:
    """Tools ordered by id, their normalised vectors, and the generation they belong to."""

    def __init__(
        self,
        segments: Sequence[Segment],
        generation: int,
        *,
        space: SegmentSpace,
        partition: Partition | None = None,
        previous: ToolIndex | None = None,
    ) -> None:
        """The snapshot of `segments` (one per catalog, all made by `space`). `partition`
        makes the vector index approximate (IVF). With `previous`, the arrays are spliced
        from its own where only a few catalogs changed (see `assembly`)."""
        self._assembly: Assembly = assemble(
            segments,
            space=space,
            partition=partition,
            previous=previous._assembly if previous is not None else None,
        )
        self._space = space
        parts = self._assembly
        self._entries = parts.entries
        self._vectors = parts.vectors
        self._bm25 = parts.bm25
        self._lexical: dict[str, LexicalIndex] = {}
        self._lexical_lock = threading.Lock()
        self.generation = generation
        # Visibility is decided per distinct scope set, not per tool: catalogs share a few
        # scope sets, so a caller's mask costs a handful of checks plus one vector op.
        self._scope_sets = parts.scope_sets
        self._scope_codes = parts.scope_codes
        self._catalogs = parts.catalogs
        self._catalog_codes = parts.catalog_codes
        # Rows are in id order, so each catalog's rows are one contiguous range.
        self._catalog_starts = parts.catalog_starts
        self._catalog_ends = parts.catalog_ends
        # Each catalog's centroid: the direction of "what this server is about".
        self._centroids = parts.centroids
        # Catalog centroids' mean (and, for "z" only, second moment): the IVF path scales
        # catalog scores over every catalog without scoring them all.
        self._centroid_mean = self._centroids.mean
        self._centroid_gram: NDArray[np.float64] | None = None
        self._views: dict[bytes, View] = {}
        self._masks: dict[Visibility, NDArray[np.bool_]] = {}
        self._views_lock = threading.Lock()
        self._all_rows = np.ones(len(self._entries), dtype=bool)
        self._all_rows.setflags(write=False)

    @property
    def segments(self) -> tuple[Segment, ...]:
        return self._assembly.segments

    @property
    def space(self) -> SegmentSpace:
        return self._space

    @property
    def spliced(self) -> bool:
        """Whether this snapshot was spliced from the previous one (not built whole)."""
        return self._assembly.spliced

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> Sequence[IndexedTool]:
        """Each row's tool as served (a catalog's are made when first read)."""
        return self._entries

    def entries_at(self, rows: NDArray[np.integer[Any]]) -> tuple[IndexedTool, ...]:
        """The entries of `rows` (a shortlist's, a page of hits'), looked up together."""
        return self._assembly.entries.take(rows)

    @property
    def dimension(self) -> int:
        return self._vectors.dimension

    @property
    def vectors(self) -> VectorIndex:
        return self._vectors

    @property
    def bm25(self) -> ArrayBM25:
        """BM25 over the document text the dense model embeds (the blend reads it)."""
        return self._bm25

    @property
    def catalog_codes(self) -> NDArray[np.int32]:
        """Each row's catalog code."""
        return self._catalog_codes

    def catalog_rows(self, code: int) -> tuple[int, int]:
        """The rows of one catalog: rows are in id order, so one contiguous range."""
        return int(self._catalog_starts[code]), int(self._catalog_ends[code])

    @property
    def centroids(self) -> Centroids:
        """Each catalog's unit centroid: the direction of "what this server is about"."""
        return self._centroids

    def centroid_moments(self, scaling: Scaling) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The centroids' mean and (for "z" only) second moment: the IVF path scales catalog
        scores over every catalog without scoring them all."""
        if scaling != Scaling.Z:
            return self._centroid_mean, self._centroid_mean[None, :]
        with self._views_lock:
            if self._centroid_gram is None:
                wide = self._centroids.all.astype(np.float64)
                self._centroid_gram = wide.T @ wide / max(len(wide), 1)
            return self._centroid_mean, self._centroid_gram

    def named(self, text: str) -> Named:
        """The tools and catalogs `text` names literally."""
        parts = self._assembly
        return parts.literals.named(text, parts.row_of, parts.catalogs.get)

    def get(self, tool_id: str, visible: Visibility = everything) -> IndexedTool | None:
        """The tool with this id, or None when it does not exist or the caller may not see it."""
        row = self._assembly.row_of(tool_id)
        if row is None:
            return None
        entry = self._entries[row]
        return entry if visible(entry.required_scopes) else None

    def visible_mask(self, visible: Visibility) -> NDArray[np.bool_]:
        """Which rows `visible` allows (read-only; copy before changing it). Memoised per
        caller for this snapshot: with a scope per catalog there are as many scope sets as
        catalogs, too many to judge again on every request."""
        if visible is everything:
            return self._all_rows
        with self._views_lock:
            found = self._masks.get(visible)
        if found is not None:
            return found
        allowed_sets = [code for code, s in enumerate(self._scope_sets) if visible(s)]
        mask = np.isin(self._scope_codes, np.asarray(allowed_sets, dtype=np.int32))
        mask.setflags(write=False)
        with self._views_lock:
            if len(self._masks) >= MAX_VIEWS:
                self._masks.clear()
            self._masks[visible] = mask
        return mask

    def view(self, visible: Visibility = everything) -> View:
        """The caller's view: its visible rows and statistics over them, built once per
        distinct mask per snapshot."""
        mask = self.visible_mask(visible)
        key = np.packbits(mask).tobytes()
        with self._views_lock:
            found = self._views.get(key)
        if found is not None:
            return found
        built = build_view(
            mask,
            self._vectors.rows,
            self._catalog_codes,
            self._catalog_starts,
            self._catalog_ends,
            self._centroids,
        )
        with self._views_lock:
            if len(self._views) >= MAX_VIEWS:
                self._views.clear()
            return self._views.setdefault(key, built)

    def view_without(self, absent: NDArray[np.bool_], visible: Visibility = everything) -> View:
        """The caller's view as if the `absent` rows were not registered (not cached: the
        training's unanswerable requests each leave out other rows)."""
        mask = self.visible_mask(visible) & ~absent
        return build_view(
            mask,
            self._vectors.rows,
            self._catalog_codes,
            self._catalog_starts,
            self._catalog_ends,
            self._centroids,
        )

    def eligible(
        self,
        visible: Visibility = everything,
        *,
        catalogs: Iterable[str] = (),
        tools: Collection[str] | None = None,
    ) -> Eligible:
        """Where a caller's search looks: its view, narrowed to `catalogs` when given and to
        `tools` (ids) when given (a workflow state's legal tools)."""
        view = self.view(visible)
        return Eligible(view=view, rows=self._narrowed(view.mask, catalogs, tools))

    def _narrowed(
        self,
        mask: NDArray[np.bool_],
        catalogs: Iterable[str],
        tools: Collection[str] | None,
    ) -> NDArray[np.bool_]:
        """A copy of `mask` keeping rows in `catalogs` (when given) and among `tools`."""
        mask = mask.copy()
        wanted = list(catalogs)
        if wanted:
            codes = [self._catalogs[name] for name in wanted if name in self._catalogs]
            mask &= np.isin(self._catalog_codes, np.asarray(codes, dtype=np.int32))
        if tools is not None:
            rows = [row for row in map(self._assembly.row_of, tools) if row is not None]
            only = np.zeros_like(mask)
            only[np.asarray(rows, dtype=np.int64)] = True
            mask &= only
        return mask

    def lexical(self, text: LexicalText = "protocol") -> LexicalIndex | ArrayBM25:
        """BM25 over one text of each tool, built on first use.

        "protocol": each tool as JSON (catalog title, name, description, input schema), the
        text of the published LiveMCPBench BM25 baseline, scored by bm25s as published.
        "document": the same document text the dense model embeds (name in words,
        description, parameters, examples), scored by the equivalent `ArrayBM25` (always
        built: the blend reads it).
        """
        if text == "document":
            return self._bm25
        with self._lexical_lock:
            index = self._lexical.get(text)
            if index is None:
                texts = [
                    protocol_tool_text(
                        e.catalog_title or e.tool.catalog,
                        e.tool.name,
                        e.tool.description,
                        e.tool.input_schema,
                    )
                    for e in self._entries
                ]
                index = self._lexical[text] = LexicalIndex(texts)
            return index

    def search_lexical(
        self,
        query: str,
        limit: int,
        *,
        catalogs: Iterable[str] = (),
        visible: Visibility = everything,
        tools: Collection[str] | None = None,
    ) -> list[Hit]:
        """The best `limit` eligible tools by BM25; tools sharing no token are not hits."""
        scores = self.lexical("protocol").scores(query)
        eligible = self._narrowed(self.visible_mask(visible), catalogs, tools)
        candidates = np.flatnonzero(eligible & (scores > 0.0))
        # Rows are in id order: lexsort by (-score, row) breaks ties by id.
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:limit]
        return [
            Hit(entry=entry, score=float(scores[row]))
            for entry, row in zip(self.entries_at(order), order, strict=True)
        ]

    def search(
        self,
        query: NDArray[np.float32],
        limit: int,
        *,
        catalogs: Iterable[str] = (),
        visible: Visibility = everything,
        tools: Collection[str] | None = None,
    ) -> list[Hit]:
        """The best `limit` tools among those visible (and in `catalogs`, among `tools`, when
        given).

        Ordered by score, ties by id. Filtering happens inside the vector search, so the page
        is full whenever enough eligible tools exist.
        """
        mask = self._narrowed(self.visible_mask(visible), catalogs, tools)
        eligible = int(mask.sum())
        if limit <= 0 or eligible == 0:
            return []
        filtered = None if eligible == len(self._entries) else mask
        # Fetch past the cut so that ties at the boundary are broken by id, not by the heap.
        fetch = min(eligible, limit * 2 + 8)
        while True:
            found, rows = self._vectors.search(query, fetch, filtered)
            keep = rows[0] >= 0
            scores, rows = found[0][keep], rows[0][keep]
            boundary_tied = len(scores) > limit and scores[limit - 1] == scores[-1]
            if not boundary_tied or fetch >= eligible:
                break
            fetch = min(eligible, fetch * 4)
        # Rows are in id order: lexsort by (-score, row) orders ties by id.
        order = np.lexsort((rows, -scores))[:limit]
        return [
            Hit(entry=entry, score=float(scores[i]), similarity=float(scores[i]))
            for entry, i in zip(self.entries_at(rows[order]), order, strict=True)
        ]

    def suggestions(self, tool_id: str, visible: Visibility = everything) -> list[str]:
        """Up to three visible ids that look like `tool_id` (for "did you mean")."""
        # Read from what names each row: a wrong id makes no catalog's entries.
        parts = self._assembly
        named = PerRow(parts.segments, parts.bounds, tools_of)
        mask = self.visible_mask(visible).tolist()
        return close_ids(tool_id, [t.tool.id for t, ok in zip(named, mask, strict=True) if ok])
