"""A sequence whose items are made when first read, each once."""

from __future__ import annotations

import pytest

from indexer.made_on_read import MadeOnRead


class Squares(MadeOnRead[int]):
    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.made: list[int] = []

    def _make(self, row: int) -> int:
        self.made.append(row)
        return row * row


def test_an_item_is_made_when_first_read_and_once() -> None:
    squares = Squares(5)
    assert squares.made == []
    assert squares[3] == 9
    assert squares[3] == 9
    assert squares[-2] == 9  # the same item, by its place from the end
    assert squares.made == [3]


def test_it_reads_as_the_sequence_it_stands_for() -> None:
    squares = Squares(4)
    assert len(squares) == 4
    assert list(squares) == [0, 1, 4, 9]
    assert squares[1:3] == (1, 4)
    assert squares[::-2] == (9, 1)
    assert 4 in squares
    assert squares.index(9) == 3
    assert sorted(squares.made) == [0, 1, 2, 3]


@pytest.mark.parametrize("row", [4, -5, 100])
def test_a_row_outside_is_an_index_error_and_makes_nothing(row: int) -> None:
    squares = Squares(4)
    with pytest.raises(IndexError):
        squares[row]
    assert squares.made == []
