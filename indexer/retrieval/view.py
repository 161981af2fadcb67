"""A caller's view of a snapshot: the rows it may see, and the corpus statistics computed over
those rows only, so that tools it may not see never move its scores or its order.

Scaling puts each retriever's scores between the mean of the collection and its best; BM25
weighs a word by how many documents hold it; catalog scores compare a request with each
catalog's centroid. Computed over the whole registry, each would let an invisible catalog
shift what a caller observes. A view computes them over the visible rows, once per distinct
visibility per snapshot (views are cached by their mask).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.centroids import Centroids, centroid_arena
from indexer.retrieval.scaling import Scaling, Spread, spread_from_moments

# The vectors of some rows (a snapshot reads them through its vector index).
Rows = Callable[[NDArray[np.int64]], NDArray[np.float32]]


@dataclass(frozen=True, kw_only=True)
class View:
    """Visible rows (sorted) and what scaling needs about them."""

    mask: NDArray[np.bool_]
    rows: NDArray[np.int64]
    # True when every row is visible: the snapshot's own statistics apply unchanged.
    full: bool
    # Catalog codes holding at least one visible row (sorted), and per catalog code the
    # centroid of its visible rows (a catalog the caller sees in part is judged by that part).
    catalog_codes: NDArray[np.int64]
    centroids: Centroids
    # The visible rows' mean vector (for the IVF path's mean without scoring every row).
    mean: NDArray[np.float64]
    _gram: list[NDArray[np.float64]] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def dense_spread(self, query: NDArray[np.float32], vectors: Rows, scaling: Scaling) -> Spread:
        """The spread of `query`'s inner products over the visible rows, from moments."""
        gram = self._second_moment(vectors) if scaling == Scaling.Z else self.mean[None, :]
        return spread_from_moments(query, self.mean, gram, scaling)

    def _second_moment(self, vectors: Rows) -> NDArray[np.float64]:
        with self._lock:
            if not self._gram:
                visible = vectors(self.rows).astype(np.float64)
                self._gram.append(visible.T @ visible / max(len(visible), 1))
            return self._gram[0]


def build_view(
    mask: NDArray[np.bool_],
    vectors: Rows,
    catalog_codes: NDArray[np.int32],
    catalog_starts: NDArray[np.int64],
    catalog_ends: NDArray[np.int64],
    centroids: Centroids,
) -> View:
    rows = np.flatnonzero(mask).astype(np.int64)
    full = bool(mask.all())
    visible_codes = np.unique(catalog_codes[rows]).astype(np.int64)
    view_centroids = centroids
    if not full:
        arena = centroid_arena(len(centroids), centroids.dimension)
        partial = arena.data[: len(centroids)]
        partial[...] = centroids.all
        for code in visible_codes.tolist():
            start, end = int(catalog_starts[code]), int(catalog_ends[code])
            part = mask[start:end]
            if part.all():
                continue  # wholly visible: the snapshot's centroid, bit for bit
            total = vectors(np.arange(start, end)[part]).sum(axis=0)
            norm = float(np.linalg.norm(total))
            partial[code] = total / (norm if norm else 1.0)
        view_centroids = Centroids.first(arena)
    if full or not len(rows):
        mean = np.zeros(centroids.dimension)  # the full view uses the index's own moments
    else:
        mean = vectors(rows).astype(np.float64).mean(axis=0)
    return View(
        mask=mask,
        rows=rows,
        full=full,
        catalog_codes=visible_codes,
        centroids=view_centroids,
        mean=mean,
    )
