"""A snapshot's rows read through their segments answer like one tuple of every row."""

from __future__ import annotations

import numpy as np
import pytest

from indexer.retrieval.per_row import PerRow, entries_of, keys_of
from indexer.retrieval.segment import SegmentSpace
from tests.indexer.retrieval.test_assembly import DIMENSION, make_segment


def test_rows_read_through_segments_answer_like_one_tuple() -> None:
    space = SegmentSpace(DIMENSION)
    segments = [
        make_segment(space, name, count, seed)
        for name, count, seed in [("ab", 3, 1), ("crm", 1, 2), ("hr", 4, 3)]
    ]
    bounds = np.asarray([0, 3, 4, 8], dtype=np.int64)
    entries = PerRow(segments, bounds, entries_of)
    keys = PerRow(segments, bounds, keys_of)
    whole = [e for s in segments for e in s.entries]
    assert len(entries) == 8
    assert list(entries) == whole
    assert [entries[row] for row in range(8)] == whole
    assert entries[-1] is whole[-1]
    assert entries[2:6] == whole[2:6]
    assert list(keys) == [k for s in segments for k in s.keys]
    for row in (8, -9):
        with pytest.raises(IndexError):
            entries[row]


def test_rows_taken_together_are_those_read_one_by_one() -> None:
    space = SegmentSpace(DIMENSION)
    segments = [make_segment(space, name, 2, seed) for seed, name in enumerate(["ab", "x"])]
    entries = PerRow(segments, np.asarray([0, 2, 4], dtype=np.int64), entries_of)
    rows = np.asarray([3, 0, 2, 2], dtype=np.int64)
    assert entries.take(rows) == tuple(entries[int(row)] for row in rows)
    assert entries.take(rows[:0]) == ()
    with pytest.raises(IndexError, match=r"rows outside 0\.\.3"):
        entries.take(np.asarray([4], dtype=np.int64))
