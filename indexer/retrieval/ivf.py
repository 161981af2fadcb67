"""Inverted-file (IVF) lists: the coarse partition, trained once and reused across snapshots,
and the lists of vectors under it, kept as a base shared by the snapshots spliced from it and a
small layer of what changed since (`Lists`)."""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import faiss
import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.cores import all_cores

# A partition is retrained when the corpus has grown or shrunk this much since training.
RETRAIN_FACTOR = 4.0
# Past this share of the base's vectors changed (gone from it, or in the layer), a splice
# folds the layer into a new base.
LAYER_SHARE = 1 / 16
_TRAIN_POINTS_PER_LIST = 32
_TRAIN_ITERATIONS = 10


def empty_lists(partition: Partition, dimension: int) -> faiss.IndexIVFScalarQuantizer:
    """Empty inverted lists over `partition` keeping each vector as 8-bit codes (384 bytes at
    384 dimensions, against 768 as float16): they only choose candidates, twice as many as
    asked for, rescored from the index's rows (`VectorIndex.search`). The codes' range is
    the partition's centroids' (their smallest and largest component): a function of the
    partition alone, so lists filled at different times hold the same codes for a vector;
    components past it are clipped, which moves a candidate's rough score, not its final
    one."""
    ivf = faiss.IndexIVFScalarQuantizer(
        partition.quantizer,
        dimension,
        len(partition.centroids),
        faiss.ScalarQuantizer.QT_8bit_uniform,
        faiss.METRIC_INNER_PRODUCT,
        False,  # vectors, not their residuals from the list centroid
    )
    ivf.sq.rangestat = faiss.ScalarQuantizer.RS_minmax
    ivf.sq.train(partition.centroids)
    ivf.is_trained = True  # the partition is trained, and the codes' range
    return ivf


def list_count(size: int) -> int:
    """Inverted lists for `size` vectors: about 2 sqrt(n), between 16 and 4096."""
    return max(16, min(4096, round(2 * math.sqrt(max(size, 1)))))


class Partition:
    """An IVF coarse quantizer (list centroids), and each key's list under it.

    A key's list is computed once (a search of every centroid: at a million distinct vectors
    and 2,000 lists, seconds on two cores), then remembered; the lists computed since the
    last `take_unsaved` are handed to whoever stores them, and a restart `remember`s them
    under the same partition (`digest`) instead of computing them again."""

    def __init__(self, centroids: NDArray[np.float32], trained_on: int) -> None:
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.trained_on = trained_on
        self.quantizer = faiss.IndexFlatIP(int(self.centroids.shape[1]))
        self.quantizer.add(self.centroids)
        # Names this partition's lists: stored lists are read back only under it.
        self.digest = hashlib.blake2b(self.centroids.tobytes(), digest_size=8).hexdigest()
        self._lists: dict[str, int] = {}
        self._unsaved: dict[str, int] = {}
        self._lock = threading.Lock()

    def remember(self, lists: Mapping[str, int]) -> int:
        """Takes in stored lists (key -> list) computed under this partition; returns how
        many. A list number this partition does not have is ignored (computed if needed)."""
        count = len(self.centroids)
        with self._lock:
            before = len(self._lists)
            self._lists.update((key, at) for key, at in lists.items() if 0 <= at < count)
            return len(self._lists) - before

    def take_unsaved(self) -> dict[str, int]:
        """The lists computed since the last call (key -> list), to be stored."""
        with self._lock:
            unsaved, self._unsaved = self._unsaved, {}
            return unsaved

    @classmethod
    def train(cls, vectors: NDArray[np.floating[Any]], *, seed: int = 7) -> Partition:
        """k-means (spherical) over a sample of at most 32 points per list."""
        unique = np.unique(vectors, axis=0) if len(vectors) <= 200_000 else vectors
        lists = min(list_count(len(vectors)), len(unique))
        sample_size = min(len(unique), lists * _TRAIN_POINTS_PER_LIST)
        rng = np.random.default_rng(seed)
        sample = unique[rng.choice(len(unique), sample_size, replace=False)]
        kmeans = faiss.Kmeans(
            int(vectors.shape[1]),
            lists,
            niter=_TRAIN_ITERATIONS,
            spherical=True,
            seed=seed,
            min_points_per_centroid=1,
        )
        with all_cores():
            kmeans.train(np.ascontiguousarray(sample, dtype=np.float32))
        centroids = kmeans.centroids
        assert centroids is not None  # set by train()
        return cls(centroids, len(vectors))

    def fits(self, size: int) -> bool:
        """Whether this partition still suits a corpus of `size` vectors."""
        return self.trained_on / RETRAIN_FACTOR <= size <= self.trained_on * RETRAIN_FACTOR

    def assign(self, keys: Sequence[str], vectors: NDArray[np.float32]) -> NDArray[np.int64]:
        """Each vector's list; only keys never seen before are computed, each once (copies
        of one document share its key and its vector)."""
        with self._lock:
            lists = self._lists
            missing: dict[str, int] = {}
            for row, key in enumerate(keys):
                if key not in lists and key not in missing:
                    missing[key] = row
            if missing:
                rows = list(missing.values())
                with all_cores():
                    _, nearest = self.quantizer.search(
                        np.ascontiguousarray(vectors[rows], dtype=np.float32), 1
                    )
                computed = dict(zip(missing, nearest[:, 0].tolist(), strict=True))
                lists.update(computed)
                self._unsaved.update(computed)
            return np.fromiter(map(lists.__getitem__, keys), dtype=np.int64, count=len(keys))


@dataclass(frozen=True, eq=False)
class Lists:
    """A snapshot's IVF lists, knowing vectors by slot: a base filled whole, shared by every
    snapshot spliced from it and never changed, the slots in it no longer live, and a layer
    holding the vectors added since (each snapshot's own copy: small). A probe reads the same
    lists in both, so it meets the candidates one index over the live vectors would: a change
    copies the layer, not a million vectors (0.24 s a change at a million tools)."""

    base: faiss.IndexIVFScalarQuantizer
    layer: faiss.IndexIVFScalarQuantizer | None = None
    # Sorted: the layer's slots, and the base's slots no longer live.
    layer_slots: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    gone: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    def changed_share(self, adding: int = 0) -> float:
        """How much of the base the layer (with `adding` more) and the gone slots amount to:
        past LAYER_SHARE a splice folds."""
        changed = len(self.layer_slots) + adding + len(self.gone)
        return changed / max(int(self.base.ntotal), 1)

    def entries(self) -> int:
        """Vectors held, live or not."""
        layer = self.layer
        return int(self.base.ntotal) + (int(layer.ntotal) if layer is not None else 0)

    def layered(
        self, partition: Partition, removed: NDArray[np.int64]
    ) -> tuple[Lists, faiss.IndexIVFScalarQuantizer]:
        """These lists without the `removed` slots, and the new layer to add vectors to (a
        copy of this one's: this snapshot keeps serving its own until the swap)."""
        in_layer = np.isin(removed, self.layer_slots)
        layer = (
            cast(faiss.IndexIVFScalarQuantizer, faiss.clone_index(self.layer))
            if self.layer is not None
            else empty_lists(partition, int(self.base.d))
        )
        _remove(layer, removed[in_layer])
        lists = Lists(
            self.base,
            layer,
            np.setdiff1d(self.layer_slots, removed[in_layer]),
            np.union1d(self.gone, removed[~in_layer]),
        )
        return lists, layer

    def with_layer_slots(self, added: NDArray[np.int64]) -> Lists:
        return Lists(self.base, self.layer, np.union1d(self.layer_slots, added), self.gone)

    def folded(self) -> faiss.IndexIVFScalarQuantizer:
        """A copy of the base without its gone slots (the caller adds the live layer's)."""
        base = cast(faiss.IndexIVFScalarQuantizer, faiss.clone_index(self.base))
        _remove(base, self.gone)
        return base

    def search(
        self, queries: NDArray[np.float32], k: int, params: faiss.SearchParametersIVF
    ) -> NDArray[np.int64]:
        """The slots of the `k` best candidates per query (-1 past the last), best first by
        the lists' own (8-bit) scores."""
        scores, found = self.base.search(queries, k, params=params)
        if self.layer is not None and self.layer.ntotal:
            more_scores, more = self.layer.search(queries, k, params=params)
            scores = np.hstack([scores, more_scores])
            found = np.hstack([found, more])
            order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
            found = np.take_along_axis(found, order, axis=1)
        return np.asarray(found, dtype=np.int64)


def _remove(ivf: faiss.IndexIVFScalarQuantizer, slots: NDArray[np.int64]) -> None:
    if len(slots):
        gone = np.ascontiguousarray(slots, dtype=np.int64)
        ivf.remove_ids(faiss.IDSelectorBatch(len(gone), faiss.swig_ptr(gone)))
