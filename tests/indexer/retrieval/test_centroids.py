"""Catalog centroids held as arena rows: what a splice gives, and what earlier snapshots keep."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.centroids import Centroids, centroid_arena, fixed_sum

DIMENSION = 4


def whole(rows: NDArray[np.float32]) -> Centroids:
    arena = centroid_arena(len(rows), DIMENSION)
    arena.data[: len(rows)] = rows
    return Centroids.first(arena)


def test_splices_give_the_rows_and_sum_of_a_whole_build_and_earlier_snapshots_keep_theirs() -> None:
    rng = np.random.default_rng(3)
    expected = rng.standard_normal((5, DIMENSION)).astype(np.float32)
    current = whole(expected)
    kept: list[tuple[Centroids, NDArray[np.float32]]] = []
    most = max_live = 0
    # Enough one-catalog changes to grow the arena and to start a new one from the live rows.
    for step in range(2_500):
        code = int(rng.integers(len(expected)))
        row = rng.standard_normal((1, DIMENSION)).astype(np.float32)
        pieces: list[tuple[int, int] | NDArray[np.float32]]
        if step % 7 == 0:  # a catalog added before `code`
            pieces = [(0, code), row, (code, len(expected))]
            gone: list[int] = []
            expected = np.concatenate([expected[:code], row, expected[code:]])
        elif step % 7 == 1 and len(expected) > 2:  # a catalog deleted
            pieces, gone = [(0, code), (code + 1, len(expected))], [code]
            expected = np.delete(expected, code, axis=0)
        else:  # a catalog replaced
            pieces, gone = [(0, code), row, (code + 1, len(expected))], [code]
            expected = np.concatenate([expected[:code], row, expected[code + 1 :]])
        current = current.spliced(pieces, gone)
        most = max(most, current.arena_rows)
        assert np.array_equal(current.all, expected)
        assert np.array_equal(current[np.arange(len(expected))[::-1]], expected[::-1])
        assert np.array_equal(current.fixed, whole(expected).fixed)
        assert np.array_equal(current.fixed, fixed_sum(expected))
        max_live = max(max_live, len(expected))
        if step % 250 == 0:
            kept.append((current, expected.copy()))
    # 2,500 rows appended, but rows no snapshot holds stay bounded (new arenas were started).
    assert most <= 2 * max_live + 1024 + 1
    for snapshot, rows in kept:
        assert np.array_equal(snapshot[np.arange(len(rows))], rows)


def test_the_mean_is_the_rows_mean() -> None:
    rows = np.random.default_rng(5).standard_normal((9, DIMENSION)).astype(np.float32)
    centroids = whole(rows)
    assert np.allclose(centroids.mean, rows.astype(np.float64).mean(axis=0), atol=1e-9)
    assert whole(rows[:0]).mean.shape == (DIMENSION,)
