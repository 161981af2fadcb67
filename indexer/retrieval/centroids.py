"""Each catalog's centroid (the direction of "what this server is about"), by catalog code,
held as rows of an arena that snapshots index into.

A change of one catalog moves the codes of every catalog after it, so a snapshot holding its
centroids as one array by code copied every row per change: at a million tools, 121,557 x 384
float32 (187 MB), the largest copy a one-tool change made (docs/results/change-cost-1m-profile.md).
Here a snapshot holds each code's slot instead (8 bytes a catalog); a change appends the new
catalogs' rows to the arena and joins slots. Rows are written once and never moved, so a
snapshot built earlier reads the same values whatever is appended later; growing replaces the
array with a larger copy, and earlier snapshots keep the one they were built on: the arena is
a `segment.VectorArena`, as the tools' vectors' is, always float32.

The centroids' mean (the IVF path scales catalog scores by their moments) is kept as a sum in
fixed point, patched per change: the same integers whether added up whole or patched, so a
spliced snapshot scores exactly like a whole one.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.segment import VectorArena

# Vector sums are kept as integers of 2**-32: a snapshot's sum is the same integer whether it
# was added up catalog by catalog or patched from the previous snapshot's (floats added in
# another order round differently), so a spliced snapshot scores exactly like a whole one.
FIXED_POINT = 2.0**32
# Rows past the live ones before a splice copies the live rows to a new arena: garbage (the
# rows of catalogs no snapshot holds any more) stays below the live rows plus this share.
_GARBAGE_SHARE = 1.0
# Rows widened to float64 at once by `fixed_sum`.
_SUM_ROWS = 8_192


def fixed_sum(rows: NDArray[np.floating[Any]]) -> NDArray[np.int64]:
    """The sum of `rows` (float64 each, then rounded to fixed point), by column; a part at a
    time, so the wide copies stay small."""
    total = np.zeros(rows.shape[1], dtype=np.int64)
    for first in range(0, len(rows), _SUM_ROWS):
        part = rows[first : first + _SUM_ROWS].astype(np.float64)
        total += np.rint(part * FIXED_POINT).astype(np.int64).sum(axis=0)
    return total


def fixed_mean(fixed: NDArray[np.int64], total: int) -> NDArray[np.float64]:
    return fixed.astype(np.float64) / FIXED_POINT / max(total, 1)


def centroid_arena(count: int, dimension: int) -> VectorArena:
    """An arena of float32 centroids with room for `count` and half as many again, its first
    `count` slots taken (written by the caller through `data`)."""
    arena = VectorArena(dimension, count + count // 2 + 16, dtype=np.float32)
    arena.claim(count)
    return arena


class Centroids:
    """A snapshot's catalog centroids: `centroids[codes]` gives their rows (float32)."""

    def __init__(
        self, arena: VectorArena, slots: NDArray[np.int64], fixed: NDArray[np.int64] | None
    ) -> None:
        self._arena = arena
        # The array as it was when this snapshot was made (a later growth replaces the
        # arena's, never this one's rows).
        self._data = arena.data
        self._slots = slots
        # None until read (a caller's partial view never reads it).
        self._fixed = fixed

    @classmethod
    def first(cls, arena: VectorArena) -> Centroids:
        """The arena's rows by code, in slot order."""
        made = cls(arena, np.arange(arena.used, dtype=np.int64), None)
        # Slots in order from the first: every centroid is a view of the arena, not a copy.
        made.all = arena.data[: arena.used]
        return made

    def spliced(
        self, pieces: Sequence[tuple[int, int] | NDArray[np.float32]], gone: Sequence[int]
    ) -> Centroids:
        """The centroids of a snapshot made of `pieces`, in code order: each a run of this
        snapshot's codes (start, end) or new catalogs' rows; `gone` are the codes of this
        snapshot's catalogs the new one drops."""
        new = [p for p in pieces if not isinstance(p, tuple) and len(p)]
        total = sum(p[1] - p[0] if isinstance(p, tuple) else len(p) for p in pieces)
        fixed = self.fixed - fixed_sum(self[np.asarray(gone, dtype=np.int64)])
        if new:
            fixed = fixed + fixed_sum(np.concatenate(new))
        arena = self._arena
        if arena.used + sum(map(len, new)) > (1 + _GARBAGE_SHARE) * total + 1024:
            # Most of the arena's rows are no snapshot's now: a new one holding this one's.
            arena = centroid_arena(total, self.dimension)
            rows = [
                self._data[self._slots[p[0] : p[1]]] if isinstance(p, tuple) else p for p in pieces
            ]
            if rows:
                np.concatenate(rows, out=arena.data[:total])
            return Centroids(arena, np.arange(total, dtype=np.int64), fixed)
        slots = [
            self._slots[p[0] : p[1]] if isinstance(p, tuple) else arena.append(p) for p in pieces
        ]
        joined = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
        return Centroids(arena, joined.astype(np.int64, copy=False), fixed)

    def __len__(self) -> int:
        return len(self._slots)

    def __getitem__(self, codes: NDArray[np.integer[Any]]) -> NDArray[np.float32]:
        rows: NDArray[np.float32] = self._data[self._slots[codes]]
        return rows

    @property
    def arena_rows(self) -> int:
        """Rows written to the arena this snapshot's rows are in, theirs or not (yet)."""
        return self._arena.used

    @property
    def dimension(self) -> int:
        return int(self._data.shape[1])

    @cached_property
    def all(self) -> NDArray[np.float32]:
        """Every code's centroid, in code order (one gather; read by the exact path, a
        partial view and the second moment)."""
        rows: NDArray[np.float32] = self._data[self._slots]
        return rows

    @property
    def fixed(self) -> NDArray[np.int64]:
        """The centroids' sum, fixed point."""
        if self._fixed is None:
            self._fixed = fixed_sum(self.all)  # a whole build's: a view, nothing gathered
        return self._fixed

    @property
    def mean(self) -> NDArray[np.float64]:
        return fixed_mean(self.fixed, len(self._slots))
