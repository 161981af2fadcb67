"""Segments made together (a start-up's thousands at once) equal segments made one by one."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from indexer.retrieval import segment as segment_module
from indexer.retrieval.lexical import Tokenised
from indexer.retrieval.segment import IndexedTool, SegmentSource, SegmentSpace
from tests.indexer.retrieval.test_assembly import DIMENSION, make_segment


def sources_of(space: SegmentSpace, plan: list[tuple[str, int, int]]) -> list[SegmentSource]:
    """The sources `make_segment` would use, taken from segments made in a scratch space."""
    made = [make_segment(space, name, count, seed) for name, count, seed in plan]
    return [
        SegmentSource(
            segment.name,
            segment.entries[::-1],  # out of id order: the space sorts them
            space.vectors[segment.slots][::-1],
            segment.keys[::-1],
            Tokenised.of(
                [f"{e.tool.catalog}: {e.tool.name} {e.tool.description}" for e in segment.entries][
                    ::-1
                ]
            ),
        )
        for segment in made
    ]


def test_segments_made_together_equal_those_made_one_at_a_time() -> None:
    # Empty catalogs between full ones, first and last: the per-segment sums skip them.
    plan = [("ab", 0, 1), ("crm", 5, 2), ("hr", 0, 3), ("x", 1, 4), ("ab0", 6, 5), ("z", 0, 6)]
    sources = sources_of(SegmentSpace(DIMENSION), plan)
    together_space, apart_space = SegmentSpace(DIMENSION), SegmentSpace(DIMENSION)
    together = together_space.segments(sources)
    apart = [apart_space.segments([source])[0] for source in sources]
    assert together_space.vocabulary == apart_space.vocabulary
    for one, other in zip(together, apart, strict=True):
        assert one.keys == other.keys
        assert [e.id for e in one.entries] == sorted(e.id for e in one.entries)
        assert [e.id for e in one.entries] == [e.id for e in other.entries]
        np.testing.assert_array_equal(
            together_space.vectors[one.slots], apart_space.vectors[other.slots]
        )
        np.testing.assert_array_equal(one.scope_codes, other.scope_codes)
        np.testing.assert_array_equal(one.postings.terms, other.postings.terms)
        np.testing.assert_array_equal(one.postings.tf, other.postings.tf)
        assert one.slots.base is None  # its own array: nothing else kept alive by it
    for key in (key for segment in together for key in segment.keys):
        np.testing.assert_array_equal(together_space.vector(key), apart_space.vector(key))


def test_an_arena_past_the_half_precision_size_holds_float16_and_hands_out_float32(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(segment_module, "HALF_PRECISION_ROWS", 1000)
    space = SegmentSpace(DIMENSION)  # room for 1,024 vectors at first
    first = make_segment(space, "alpha", 600, 1)
    assert space.vectors.dtype == np.float32
    before = space.vectors[first.slots].copy()
    # Growing past the size converts what is there; the next segment is written as float16.
    second = make_segment(space, "beta", 600, 2)
    assert space.vectors.dtype == np.float16
    assert np.allclose(space.vectors[first.slots].astype(np.float32), before, atol=1e-3)
    vector = space.vector(second.keys[0])
    assert vector is not None
    assert vector.dtype == np.float32
    # A renumbering that leaves fewer live vectors than the size goes back to float32.
    (moved,) = space.renumbered([first])
    assert space.vectors.dtype == np.float32
    assert np.allclose(space.vectors[moved.slots], before, atol=1e-3)


def test_an_arena_writes_rows_given_apart_and_matrices_each_in_its_parts_order() -> None:
    rng = np.random.default_rng(5)
    arena = segment_module.VectorArena(DIMENSION, capacity=4)
    apart = [rng.standard_normal(DIMENSION).astype(np.float32) for _ in range(3)]
    matrix = rng.standard_normal((2, DIMENSION)).astype(np.float32)
    more = [rng.standard_normal(DIMENSION).astype(np.float32) for _ in range(2)]
    nothing: list[NDArray[np.float32]] = []
    parts: list[tuple[segment_module.Rows, list[int]]] = [
        (apart, [2, 0, 1]),
        (matrix, [1, 0]),
        (more, [1, 0]),
        (nothing, []),
        (apart, [0]),
    ]
    slots = arena.append_parts(parts)
    assert [s.tolist() for s in slots] == [[0, 1, 2], [3, 4], [5, 6], [], [7]]
    expected = [apart[2], apart[0], apart[1], matrix[1], matrix[0], more[1], more[0], apart[0]]
    np.testing.assert_array_equal(arena.data[: arena.used], np.stack(expected))


def test_a_segments_entries_are_made_once_when_first_read_in_id_order() -> None:
    # What a start-up makes: sources whose entries are made by a callable, named meanwhile by
    # their tools and scopes; the catalogs' rows given out of id order.
    sources = sources_of(SegmentSpace(DIMENSION), [("crm", 5, 2), ("hr", 3, 3)])
    made: list[str] = []

    def later(source: SegmentSource) -> SegmentSource:
        entries = list(source.entries)  # type: ignore[arg-type]

        def make() -> tuple[IndexedTool, ...]:
            made.append(source.name)
            return tuple(entries)

        return SegmentSource(
            source.name,
            make,
            source.matrix,
            source.keys,
            source.tokens,
            tools=entries,
            scopes=[e.required_scopes for e in entries],
        )

    space, eager_space = SegmentSpace(DIMENSION), SegmentSpace(DIMENSION)
    lazy = space.segments([later(source) for source in sources])
    eager = eager_space.segments(sources)
    assert made == []
    assert [len(s) for s in lazy] == [5, 3]
    assert [s.rows for s in lazy] == [s.rows for s in eager]
    for one, other in zip(lazy, eager, strict=True):
        np.testing.assert_array_equal(one.scope_codes, other.scope_codes)
    assert made == []
    assert [e.id for e in lazy[0].entries] == [e.id for e in eager[0].entries]
    assert [e.id for e in lazy[0].entries] == sorted(e.id for e in lazy[0].entries)
    assert lazy[0].entries is lazy[0].entries
    assert made == ["crm"]


def test_entries_made_later_need_the_tools_and_scopes_that_name_them() -> None:
    (source,) = sources_of(SegmentSpace(DIMENSION), [("crm", 2, 2)])
    entries = tuple(source.entries)  # type: ignore[arg-type]
    unnamed = SegmentSource(source.name, lambda: entries, source.matrix, source.keys, source.tokens)
    with pytest.raises(ValueError, match="crm: entries made later need their tools and scopes"):
        SegmentSpace(DIMENSION).segments([unnamed])
