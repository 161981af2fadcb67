"""Exact inner-product search over normalised vectors: the only module that imports faiss."""

from __future__ import annotations

import faiss
import numpy as np
from numpy.typing import NDArray


class VectorIndex:
    """A FAISS flat inner-product index (exact: every vector is scored)."""

    def __init__(self, vectors: NDArray[np.float32]) -> None:
        if vectors.ndim != 2:
            raise ValueError("vectors must be a 2-D array")
        self._dimension = int(vectors.shape[1])
        self._vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._index = faiss.IndexFlatIP(self._dimension)
        if len(vectors):
            self._index.add(self._vectors)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    @property
    def dimension(self) -> int:
        return self._dimension

    def scores(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        """The inner product of `query` with every row (hybrid ranking needs them all)."""
        if not len(self._vectors):
            return np.zeros(0, dtype=np.float32)
        return self._vectors @ np.asarray(query, dtype=np.float32)

    def search(
        self,
        query: NDArray[np.float32],
        k: int,
        allowed: NDArray[np.bool_] | None = None,
    ) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
        """The `k` best rows for one query vector, restricted to `allowed` rows when given.

        Returns (scores, rows), best first, without the -1 padding FAISS uses when fewer
        than `k` rows qualify.
        """
        k = min(k, len(self))
        if k <= 0:
            return np.zeros(0, dtype=np.float32), np.zeros(0, dtype=np.int64)
        matrix = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        params = None
        if allowed is not None:
            # Filtering inside the search (not after it) keeps pages full for callers that
            # may see only a few tools.
            bitmap = np.packbits(allowed.astype(np.uint8), bitorder="little")
            # The selector points into `bitmap`, which must outlive the search call.
            selector = faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bitmap))
            params = faiss.SearchParameters(sel=selector)  # type: ignore[call-arg]  # stubs omit the SWIG keyword constructor
        scores, rows = self._index.search(matrix, k, params=params)
        keep = rows[0] >= 0
        return scores[0][keep].astype(np.float32), rows[0][keep].astype(np.int64)
