"""Values per row of a snapshot read through the row's segment: rows are in id order, so
each segment's rows are one range, found by a binary search of where the ranges start."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any, TypeVar, overload

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.segment import IndexedTool, NamedTool, Segment

Row = TypeVar("Row")


def keys_of(segment: Segment) -> Sequence[str]:
    return segment.keys


def entries_of(segment: Segment) -> Sequence[IndexedTool]:
    return segment.entries


def tools_of(segment: Segment) -> Sequence[NamedTool]:
    return segment.tools


class PerRow(Sequence[Row]):
    """One value per row, read from the row's segment when asked for (`Segment.entries`
    are made on first read; a splice reads only the new rows' document hashes)."""

    def __init__(
        self,
        ordered: Sequence[Segment],
        bounds: NDArray[np.int64],
        of: Callable[[Segment], Sequence[Row]],
    ) -> None:
        self._ordered = ordered
        self._bounds = bounds
        self._of = of

    def __len__(self) -> int:
        return int(self._bounds[-1])

    @overload
    def __getitem__(self, row: int) -> Row: ...
    @overload
    def __getitem__(self, row: slice) -> Sequence[Row]: ...
    def __getitem__(self, row: int | slice) -> Row | Sequence[Row]:
        if isinstance(row, slice):
            return [self[r] for r in range(*row.indices(len(self)))]
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(row)
        code = int(np.searchsorted(self._bounds, row, side="right")) - 1
        return self._of(self._ordered[code])[row - int(self._bounds[code])]

    def take(self, rows: NDArray[np.integer[Any]]) -> tuple[Row, ...]:
        """The values of `rows`, their segments found by one search (a shortlist's rows)."""
        bounds, ordered, of = self._bounds, self._ordered, self._of
        if len(rows) and not (rows.min() >= 0 and rows.max() < bounds[-1]):
            raise IndexError(f"rows outside 0..{int(bounds[-1]) - 1}")
        codes = (np.searchsorted(bounds, rows, side="right") - 1).tolist()
        within = (rows - bounds[codes]).tolist()
        return tuple(of(ordered[code])[row] for code, row in zip(codes, within, strict=True))

    def __iter__(self) -> Iterator[Row]:
        return chain.from_iterable(map(self._of, self._ordered))
