"""Inner-product search over normalised vectors.

Below a size threshold every vector is scored (one matrix product, exact). Above it, inverted
lists (FAISS IVF, vectors kept in the lists as 8-bit codes: `indexer.retrieval.ivf`) score only
the lists nearest the query: the coarse partition is trained once and reused across
snapshots, and each vector's list is remembered by key, so a catalog change does not
re-cluster or re-assign the other tools. The lists only choose candidates: their scores are
recomputed from the vectors the index reads its rows from (float32, or float16 in an arena
past `segment.HALF_PRECISION_ROWS`: the lists' own precision).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

import faiss
import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.cores import all_cores, blas_kernels, one_thread_per_search
from indexer.retrieval.ivf import LAYER_SHARE, Lists, Partition, empty_lists, list_count
from indexer.retrieval.scaling import Scaling, Spread, spread_from_moments

# Lists probed per query, at every size. Recall follows the number of lists probed, not their
# share: on the bench corpus (the 200 queries' real embeddings, distinct vectors) 64 probes give
# recall@10 against exact search 0.980 at 10,000 tools (200 lists), 0.9775 at 100,000 (632)
# and 0.974 at 1,000,000 (2,000), where a sixteenth of the lists (125) gave 0.986 for 5 ms
# more a request in process (docs/results/ivf-probes-1m.md). With about 2 sqrt(n) lists a
# probe pass reads about 32 sqrt(n) vectors: its cost grows with the root of the corpus.
PROBES = 64
# Lists each clause of a request probes (the request's own vector probes PROBES). A clause's
# candidates join the request's, its words' and its catalogs', and each clause was one more
# full probe pass (3.85 texts a request in the bench), the largest part of the ranking past
# the floor at a million tools. With 16, the bench's 200 requests keep their first hit at
# 10,000 to 1,000,000 tools and their whole top 10 in 190 to 200 cases of 200, while a
# clause vector's own recall@10 falls from 0.97-0.99 to 0.90-0.96
# (docs/results/clause-probes.md, decision 0095).
CLAUSE_PROBES = 16
# Rows added to IVF lists per call (`VectorIndex._add`). Over a float16 arena each part is
# a float32 copy: at 8,192 rows (12 MB) the allocator hands the same memory back part after
# part, where 65,536-row parts (100 MB) were mapped afresh each time, and their page faults
# tripled the copies' cost (0.39 s of a 100,000-tool load; bench/startup_cost.py).
_ADD_PART = 8_192
# Candidates the IVF lists choose per result asked for: their 8-bit scores are rough, and the
# rows' own vectors decide (recall@10 against exact search with twice as many: that of
# float16 lists, docs/decisions/0080).
CANDIDATES_PER_RESULT = 2

__all__ = [
    "Partition",
    "VectorIndex",
    "all_cores",
    "blas_kernels",
    "list_count",
    "one_thread_per_search",
]


class VectorIndex:
    """Rows of normalised vectors; exact, or IVF when built with a partition.

    Rows are read through their slots in a vector store (by default the rows are the store):
    a snapshot built over a shared store copies no vectors. The IVF index knows each vector
    by its slot, and slots outlive a snapshot, so the next snapshot's index is this one's
    copy with the changed slots removed and added (`spliced`), not every vector added again.
    """

    _lists: Lists | None  # IVF lists (None: exact search)

    def __init__(
        self,
        store: NDArray[np.floating[Any]],
        *,
        slots: NDArray[np.int64] | None = None,
        partition: Partition | None = None,
        keys: Sequence[str] = (),
        mean: NDArray[np.float64] | None = None,
    ) -> None:
        """`slots[row]`: the store row holding each row's vector (default: every store row,
        in order). `keys` name each row's vector (its document hash) so IVF list
        assignments carry over; `mean` is the rows' mean vector when the caller has it."""
        self._setup(store, slots, partition, mean)
        if self._partition is not None:
            if len(keys) != len(self):
                raise ValueError("an IVF index needs one key per vector")
            ivf = empty_lists(self._partition, self._dimension)
            self._add(ivf, self._partition, keys, np.arange(len(self), dtype=np.int64))
            self._lists = Lists(ivf)

    def _setup(
        self,
        store: NDArray[np.floating[Any]],
        slots: NDArray[np.int64] | None,
        partition: Partition | None,
        mean: NDArray[np.float64] | None,
    ) -> None:
        if store.ndim != 2:
            raise ValueError("vectors must be a 2-D array")
        self._dimension = int(store.shape[1])
        # A float16 store (a large arena: segment.arena_dtype) is read as it is; rows handed
        # out are float32 (`rows`, `matrix`).
        self._store: NDArray[np.floating[Any]] = (
            store if store.dtype == np.float16 else np.ascontiguousarray(store, np.float32)
        )
        self._slots = np.arange(len(store), dtype=np.int64) if slots is None else slots
        self._matrix: NDArray[np.float32] | None = None
        if slots is None and self._store.dtype == np.float32:
            self._matrix = cast(NDArray[np.float32], self._store)
        self._lock = threading.Lock()
        self._partition = partition if len(self._slots) else None
        self._lists = None
        # Packed bitmap of the live slots, for searches of base lists with gone slots.
        self._live: NDArray[np.uint8] | None = None
        self._probes = 0
        # Slot -> row, for what the IVF index returns (None: slots are rows).
        self._row_of: NDArray[np.int64] | None = None
        if slots is not None:
            self._row_of = np.full(len(self._store), -1, dtype=np.int64)
            self._row_of[slots] = np.arange(len(slots), dtype=np.int64)
        if self._partition is None:
            self._matrix = self.matrix  # the exact path scores every row on every search
        if mean is None:
            mean = self._chunked_sum(lambda chunk: chunk.sum(axis=0, dtype=np.float64))
            mean = mean / max(len(self), 1)
        self._mean = mean
        self._gram: NDArray[np.float64] | None = None
        if self._partition is not None:
            lists = len(self._partition.centroids)
            self._probes = min(lists, PROBES)

    def _add(
        self,
        ivf: faiss.IndexIVFScalarQuantizer,
        partition: Partition,
        keys: Sequence[str],
        rows: NDArray[np.int64],
    ) -> None:
        """Adds `rows` under their slots, with their remembered lists: nothing is re-assigned.
        FAISS reads through raw pointers, so every array is named for the call. In parts:
        over a float16 store each part's rows are a float32 copy."""
        for start in range(0, len(rows), _ADD_PART):
            part = rows[start : start + _ADD_PART]
            vectors = self.rows(part)
            lists = partition.assign([keys[row] for row in part.tolist()], vectors)
            slots = np.ascontiguousarray(self._slots[part])
            ivf.add_core(
                len(vectors), faiss.swig_ptr(vectors), faiss.swig_ptr(slots), faiss.swig_ptr(lists)
            )

    @classmethod
    def spliced(
        cls,
        previous: VectorIndex,
        store: NDArray[np.floating[Any]],
        *,
        slots: NDArray[np.int64],
        partition: Partition | None,
        keys: Sequence[str],
        removed: NDArray[np.int64],
        added: NDArray[np.int64],
        mean: NDArray[np.float64] | None = None,
    ) -> VectorIndex:
        """The index of the rows `slots` of `store`, made from `previous` by removing the
        `removed` slots and adding the `added` rows: what a full build finds, in time
        proportional to the change (the lists' layer is copied, not their base; past
        LAYER_SHARE the layer is folded into a copy of the base). Falls back to a full build
        when `previous` was built over another partition."""
        lists = previous._lists
        if partition is None or lists is None or previous._partition is not partition:
            return cls(store, slots=slots, partition=partition, keys=keys, mean=mean)
        index = cls.__new__(cls)
        index._setup(store, slots, partition, mean)
        added = np.asarray(added, dtype=np.int64)
        lists, layer = lists.layered(partition, np.asarray(removed, dtype=np.int64))
        if lists.changed_share(len(added)) > LAYER_SHARE:
            base = lists.folded()
            assert index._row_of is not None  # slots were given
            kept = index._row_of[lists.layer_slots]
            index._add(base, partition, keys, np.concatenate([kept, added]))
            index._lists = Lists(base)
            return index
        index._add(layer, partition, keys, added)
        index._lists = lists.with_layer_slots(index._slots[added])
        return index

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def approximate(self) -> bool:
        return self._lists is not None

    @property
    def layer_size(self) -> int:
        """Vectors in the IVF lists' layer over their base (0 for a whole or exact index)."""
        return len(self._lists.layer_slots) if self._lists is not None else 0

    @property
    def partition(self) -> Partition | None:
        return self._partition

    def list_bytes(self) -> int:
        """What the IVF lists hold (codes and ids, base and layer; 0 for an exact index):
        FAISS' own memory, which Python's allocator statistics do not see."""
        if self._lists is None:
            return 0
        entry = self._lists.base.code_size + 8  # a vector's 8-bit code and its 64-bit id
        return self._lists.entries() * entry

    @property
    def matrix(self) -> NDArray[np.float32]:
        """Every row's vector, in row order (gathered from the store on first use)."""
        with self._lock:
            if self._matrix is None:
                self._matrix = np.ascontiguousarray(self._store[self._slots], np.float32)
            return self._matrix

    def rows(self, rows: NDArray[np.signedinteger[Any]]) -> NDArray[np.float32]:
        """The vectors of `rows`, float32: a copy, or a read-only view when they lie in
        consecutive slots of a float32 store (as a whole index does after a full build: a
        million tools' gather was 1.5 GB more at its peak)."""
        if self._matrix is not None:
            return np.ascontiguousarray(self._matrix[rows])
        slots = self._slots[rows]
        if len(slots) > 1 and slots[-1] - slots[0] == len(slots) - 1:
            first = int(slots[0])
            if np.array_equal(slots, np.arange(first, first + len(slots))):
                view = self._store[first : first + len(slots)]
                if view.dtype != np.float32:
                    return view.astype(np.float32)
                view.flags.writeable = False
                return cast(NDArray[np.float32], view)
        return np.ascontiguousarray(self._store[slots], np.float32)

    def _chunked_sum(
        self, part: Callable[[NDArray[np.float32]], NDArray[np.float64]]
    ) -> NDArray[np.float64]:
        total: NDArray[np.float64] | None = None
        for start in range(0, len(self), 8192):
            value = part(self.rows(np.arange(start, min(start + 8192, len(self)))))
            total = value if total is None else total + value
        return total if total is not None else np.zeros(self._dimension)

    def _second_moment(self) -> NDArray[np.float64]:
        """The rows' second-moment matrix (float64, in chunks), computed on first use: only
        "z" scaling on an IVF index needs it."""
        with self._lock:
            gram = self._gram
        if gram is None:
            with all_cores():
                gram = self._chunked_sum(lambda chunk: (chunk.T @ chunk).astype(np.float64))
            gram = gram / max(len(self), 1)
            with self._lock:
                self._gram = gram
        return gram

    def score_spread(self, query: NDArray[np.float32], scaling: Scaling) -> Spread:
        """Mean and standard deviation (when `scaling` needs it) of `query`'s inner product
        over every row. Without scoring every row: from the corpus' mean vector and second
        moment (only kept for IVF indexes; exact ones score every row anyway)."""
        if self._lists is None:
            return Spread.of(self.scores(query)[0], scaling)
        gram = self._second_moment() if scaling == Scaling.Z else self._mean[None, :]
        return spread_from_moments(query, self._mean, gram, scaling)

    def scores(self, queries: NDArray[np.float32]) -> NDArray[np.float32]:
        """Exact inner products, one row per query and one column per vector."""
        matrix = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not len(self):
            return np.zeros((len(matrix), 0), dtype=np.float32)
        return np.ascontiguousarray((self.matrix @ matrix.T).T)

    def scores_at(
        self, queries: NDArray[np.float32], rows: NDArray[np.int64]
    ) -> NDArray[np.float32]:
        """Exact inner products with the given rows only (queries x rows)."""
        matrix = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        return np.ascontiguousarray((self.rows(rows) @ matrix.T).T)

    def search(
        self,
        queries: NDArray[np.float32],
        k: int,
        allowed: NDArray[np.bool_] | None = None,
        *,
        probes: int | None = None,
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """The `k` best rows per query (restricted to `allowed` rows when given), best first;
        on IVF lists, from the lists nearest each query: PROBES of them, or at most `probes`.

        Returns (scores, rows), each queries x k; where fewer than k rows qualify, the rest
        is padded with -inf scores and row -1.
        """
        matrix = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = min(k, len(self))
        if allowed is not None and allowed.all():
            allowed = None  # a filter that keeps everything only slows the lists' scan
        if k <= 0:
            empty = np.zeros((len(matrix), 0))
            return empty.astype(np.float32), empty.astype(np.int64)
        if self._lists is not None:
            probed = self._probes if probes is None else min(probes, self._probes)
            return self._search_ivf(matrix, k, allowed, probed)
        scores = self.scores(matrix)
        if allowed is not None:
            scores = np.where(allowed[None, :], scores, -np.inf).astype(np.float32)
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        top_scores = np.take_along_axis(scores, top, axis=1)
        order = np.argsort(-top_scores, axis=1, kind="stable")
        rows = np.take_along_axis(top, order, axis=1).astype(np.int64)
        best = np.take_along_axis(top_scores, order, axis=1)
        rows[~np.isfinite(best)] = -1
        return best, rows

    def search_intents(
        self, queries: NDArray[np.float32], k: int, allowed: NDArray[np.bool_] | None = None
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """`search` for a request's intents: the request's vector (the first) through the
        index's lists, each clause's through CLAUSE_PROBES at most. An exact index scores
        every row for all of them in one pass."""
        matrix = np.atleast_2d(queries)
        if self._lists is None:
            return self.search(matrix, k, allowed)
        scores, rows = self.search(matrix[:1], k, allowed)
        if len(matrix) > 1:
            more_scores, more = self.search(matrix[1:], k, allowed, probes=CLAUSE_PROBES)
            scores, rows = np.vstack([scores, more_scores]), np.vstack([rows, more])
        return scores, rows

    def _search_ivf(
        self,
        matrix: NDArray[np.float32],
        k: int,
        allowed: NDArray[np.bool_] | None,
        probes: int,
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        lists = self._lists
        assert lists is not None
        params = faiss.SearchParametersIVF()
        params.nprobe = max(probes, 1)
        bitmap: NDArray[np.uint8] | None = None
        if allowed is not None:
            if self._row_of is not None:
                # The lists know vectors by slot: the allowed rows' slots.
                by_slot = np.zeros(len(self._row_of), dtype=bool)
                by_slot[self._slots] = allowed
                allowed = by_slot
            bitmap = np.packbits(allowed.astype(np.uint8), bitorder="little")
        elif len(lists.gone):
            bitmap = self._live_slots()
        selector = None
        if bitmap is not None:
            # The selector points into `bitmap`: both stay alive until the search is over.
            selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
            params.sel = selector
        found = lists.search(matrix, min(CANDIDATES_PER_RESULT * k, len(self)), params)
        del selector, bitmap
        if self._row_of is not None:
            found = np.where(found >= 0, self._row_of[np.maximum(found, 0)], -1)
        scores, rows = self._rescored(matrix, found)
        return scores[:, :k], rows[:, :k]

    def _live_slots(self) -> NDArray[np.uint8]:
        """The packed bitmap of the slots this index's rows hold (made on first use)."""
        with self._lock:
            if self._live is None:
                assert self._row_of is not None  # the base has gone slots: slots were given
                live = np.zeros(len(self._row_of), dtype=np.uint8)
                live[self._slots] = 1
                self._live = np.packbits(live, bitorder="little")
            return self._live

    def _rescored(
        self, queries: NDArray[np.float32], rows: NDArray[np.int64]
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """`rows` (queries x k, -1 for none) with their float32 scores, best first: the
        8-bit lists only chose them."""
        vectors = self.rows(np.maximum(rows, 0).ravel()).reshape(*rows.shape, self._dimension)
        scores = np.einsum("qkd,qd->qk", vectors, queries).astype(np.float32)
        scores[rows < 0] = -np.inf
        # Ties by row (rows are in id order): copies of one vector come out the same way
        # whichever of them the lists met first, base or layer.
        order = np.lexsort((rows, -scores))
        return np.take_along_axis(scores, order, axis=1), np.take_along_axis(rows, order, axis=1)
