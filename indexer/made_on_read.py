"""Sequences whose items are made when first read: a catalog's entries and facts, of which a
search reads the few tools it ranks (decision 0092)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TypeVar, overload

Item = TypeVar("Item")


class MadeOnRead(Sequence[Item]):
    """`length` items, item `row` made by `_make(row)` the first time it is read and kept.
    Two threads reading an item first may both make it; the items made are equal, one is
    kept."""

    def __init__(self, length: int) -> None:
        self._length = length
        self._made: dict[int, Item] = {}

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, row: int) -> Item: ...
    @overload
    def __getitem__(self, row: slice) -> tuple[Item, ...]: ...
    def __getitem__(self, row: int | slice) -> Item | tuple[Item, ...]:
        if isinstance(row, slice):
            return tuple(self[r] for r in range(*row.indices(self._length)))
        if row < 0:
            row += self._length
        made = self._made.get(row)
        if made is None:
            if not 0 <= row < self._length:
                raise IndexError(row)
            made = self._made[row] = self._make(row)
        return made

    @abstractmethod
    def _make(self, row: int) -> Item:
        """Item `row` (0 <= row < len)."""
