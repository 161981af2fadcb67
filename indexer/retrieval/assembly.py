"""Putting a snapshot's arrays together from its catalogs' segments: whole, or spliced from
the previous snapshot's when few catalogs changed.

Either way the result is the same arrays in the same row order (tools by id), so a spliced
snapshot ranks exactly like one built from nothing; splicing only saves the work: the
previous snapshot's per-row arrays are cut at the changed catalogs instead of stacked catalog
by catalog, BM25 becomes a layer over the last whole index, the IVF lists are copied and
patched instead of filled again, and nothing is tokenised or normalised twice.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.array_bm25 import ArrayBM25
from indexer.retrieval.centroids import FIXED_POINT, Centroids, centroid_arena, fixed_mean
from indexer.retrieval.literal import Literals, Spelled
from indexer.retrieval.per_row import PerRow, entries_of, keys_of
from indexer.retrieval.segment import IndexedTool, Segment, SegmentSpace
from indexer.retrieval.vector_index import Partition, VectorIndex

# A change touching more than this share of the rows is built whole: splicing would copy as
# much and patch more.
SPLICE_SHARE = 0.5
Scalar = TypeVar("Scalar", bound=np.generic)
# Up to this many added and removed segments, a plan finds each by a scan of the id lists (in
# C); past it, by one pass in Python.
_SCANNED_CHANGES = 64
# Files the name lookups of whole builds, one at a time, off the builder's thread.
_FILING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="capreg-literals")
# A whole build joins the BM25 postings here while its own thread fills the vector index:
# both are mostly array work that lets go of the interpreter, so on two cores they overlap.
_JOINING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="capreg-bm25-join")


@dataclass(kw_only=True, frozen=True)
class Assembly:
    """A snapshot's rows: every segment's tools in id order, and the arrays over them."""

    segments: tuple[Segment, ...]
    # Row where each segment starts (and one past the last row).
    bounds: NDArray[np.int64]
    # Each row's tool as served (made a catalog at a time, when first read: `Segment`).
    entries: PerRow[IndexedTool]
    vectors: VectorIndex
    bm25: ArrayBM25
    # The name lookup, or the thread still filing it (a whole build files every name:
    # pure Python, ~0.5 s at 100k tools, so serving starts without waiting for it).
    filing: Literals | Future[Literals]
    scope_sets: tuple[frozenset[str], ...]
    scope_codes: NDArray[np.int32]
    catalogs: dict[str, int]
    catalog_codes: NDArray[np.int32]
    # Unit centroid per catalog code.
    centroids: Centroids
    spliced: bool
    # What a splice reads of the previous snapshot: each row's slot and BM25 length, each
    # segment's sort key, the vectors' sum (fixed point) and the arena's element type then.
    slots: NDArray[np.int64]
    lengths: NDArray[np.int64]
    fixed_sum: NDArray[np.int64]
    store_dtype: np.dtype[Any]
    sort_keys: list[str]

    @property
    def literals(self) -> Literals:
        """The name lookup (waits for the filing thread the first time, if still running)."""
        filing = self.filing
        return filing if isinstance(filing, Literals) else filing.result()

    @property
    def catalog_starts(self) -> NDArray[np.int64]:
        return self.bounds[:-1]

    @property
    def catalog_ends(self) -> NDArray[np.int64]:
        return self.bounds[1:]

    def row_of(self, tool_id: str) -> int | None:
        """The row of the tool with this id (None when there is none)."""
        catalog, _, name = tool_id.partition("/")
        code = self.catalogs.get(catalog)
        if code is None:
            return None
        row = self.segments[code].rows.get(name)
        return None if row is None else int(self.bounds[code]) + row


def assemble(
    segments: Sequence[Segment],
    *,
    space: SegmentSpace,
    partition: Partition | None = None,
    previous: Assembly | None = None,
) -> Assembly:
    """The rows of `segments` (one per catalog, any order; empty ones are left out).
    `previous`, built from segments of the same `space`, is spliced when that is cheaper."""
    if (
        previous is not None
        and previous.vectors.partition is partition
        and previous.store_dtype == space.vectors.dtype  # sums are of the arena's values
    ):
        plan = _Plan.of(previous, segments)
        if plan.changed <= SPLICE_SHARE * max(plan.total, len(previous.entries)):
            return _spliced(previous, plan, space, partition)
    return _whole(segments, space, partition)


def _whole(
    segments: Sequence[Segment], space: SegmentSpace, partition: Partition | None
) -> Assembly:
    ordered = tuple(sorted((s for s in segments if len(s)), key=lambda s: s.sort_key))
    sizes = np.fromiter(map(len, ordered), dtype=np.int64, count=len(ordered))
    bounds = _bounds(sizes)
    slots = _stack([s.slots for s in ordered], (0,), np.int64)
    # The centroids are written straight into an arena with room for later changes' rows.
    bm25 = _JOINING.submit(ArrayBM25.joined, space.vocabulary, [s.postings for s in ordered])
    arena = centroid_arena(len(ordered), space.dimension)
    sums = _Sums.of(space.vectors, slots, bounds, out=arena.data[: len(ordered)])
    total = int(bounds[-1])
    keys = list(chain.from_iterable(s.keys for s in ordered))
    store = space.vectors
    vectors = VectorIndex(
        store, slots=slots, partition=partition, keys=keys, mean=fixed_mean(sums.fixed, total)
    )
    lengths = _stack([s.postings.lengths for s in ordered], (0,), np.int64)
    return Assembly(
        segments=ordered,
        bounds=bounds,
        entries=PerRow(ordered, bounds, entries_of),
        vectors=vectors,
        bm25=bm25.result(),
        filing=_FILING.submit(Literals, _spelled(ordered), [s.name for s in ordered]),
        scope_sets=space.scope_sets,
        scope_codes=_stack([s.scope_codes for s in ordered], (0,), np.int32),
        catalogs=_codes(ordered),
        catalog_codes=np.repeat(np.arange(len(ordered), dtype=np.int32), sizes),
        centroids=Centroids.first(arena),
        spliced=False,
        slots=slots,
        lengths=lengths,
        fixed_sum=sums.fixed,
        store_dtype=store.dtype,
        sort_keys=[s.sort_key for s in ordered],
    )


# A piece of a spliced snapshot: a run of the previous snapshot's segments (codes start, end),
# or a new segment.
Piece = tuple[int, int] | Segment


@dataclass(frozen=True)
class _Plan:
    """How a snapshot is made from the previous one: its segments as runs of the previous
    snapshot's and new segments between them, in row order."""

    pieces: tuple[Piece, ...]
    gone: tuple[Segment, ...]
    # The previous snapshot's codes of `gone`.
    gone_codes: tuple[int, ...]
    added: tuple[Segment, ...]
    total: int
    changed: int

    @property
    def in_place(self) -> bool:
        """Whether every catalog keeps its code: each new segment replaces one of the same
        name, and nothing else goes (the previous name-to-code map still holds)."""
        return [s.name for s in self.added] == [s.name for s in self.gone]

    @classmethod
    def of(cls, previous: Assembly, segments: Sequence[Segment]) -> _Plan:
        # Linear in the catalogs, in C where it can be: the ids compared as sets, and the few
        # changed segments found by a scan of the id lists. Steps in Python per catalog took
        # 0.12 s of a profiled one-tool change at a million tools (121,557 catalogs:
        # docs/results/change-cost-1m-profile.md); the work proportional to the tools is
        # left to array operations over the previous snapshot's runs.
        before = list(map(id, previous.segments))
        current = [s for s in segments if len(s)]
        now = list(map(id, current))
        new_ids, gone_ids = set(now).difference(before), set(before).difference(now)
        if len(new_ids) + len(gone_ids) <= _SCANNED_CHANGES:
            added = sorted((current[now.index(i)] for i in new_ids), key=lambda s: s.sort_key)
            gone_codes = sorted(before.index(i) for i in gone_ids)
        else:
            added = sorted((s for s in current if id(s) in new_ids), key=lambda s: s.sort_key)
            gone_codes = [code for code, i in enumerate(before) if i in gone_ids]
        # Events in the previous snapshot's code order: a new segment goes before the first
        # previous one that sorts after it (a replaced catalog's sorts equal: it goes first,
        # then the replaced one is skipped).
        events: list[tuple[int, int, Segment | None]] = [
            (bisect.bisect_left(previous.sort_keys, s.sort_key), 0, s) for s in added
        ]
        events += [(code, 1, None) for code in gone_codes]
        events.sort(key=lambda event: (event[0], event[1]))
        pieces: list[Piece] = []
        cursor = 0
        for code, _, segment in events:
            if cursor < code:
                pieces.append((cursor, code))
                cursor = code
            if segment is not None:
                pieces.append(segment)
            else:
                cursor = code + 1
        if cursor < len(previous.segments):
            pieces.append((cursor, len(previous.segments)))
        gone = tuple(previous.segments[code] for code in gone_codes)
        new_rows, gone_rows = sum(map(len, added)), sum(map(len, gone))
        total = len(previous.entries) + new_rows - gone_rows
        return cls(
            tuple(pieces), gone, tuple(gone_codes), tuple(added), total, new_rows + gone_rows
        )


def _spliced(
    previous: Assembly, plan: _Plan, space: SegmentSpace, partition: Partition | None
) -> Assembly:
    """The snapshot of `plan`: the previous snapshot's arrays cut at the changed catalogs and
    joined with the new ones' (array copies; no step per unchanged catalog or tool)."""
    store = space.vectors
    old = previous.bounds
    runs: list[Sequence[Segment]] = []
    sizes: list[NDArray[np.int64]] = []
    for piece in plan.pieces:
        if isinstance(piece, Segment):
            runs.append((piece,))
            sizes.append(np.asarray([len(piece)], dtype=np.int64))
        else:
            runs.append(previous.segments[piece[0] : piece[1]])
            sizes.append(np.diff(old[piece[0] : piece[1] + 1]))
    ordered = tuple(chain.from_iterable(runs))
    size = _stack(sizes, (0,), np.int64)
    bounds = _bounds(size)
    # Each piece's rows: in the previous snapshot (a run), and here.
    starts = bounds[np.cumsum([0, *map(len, runs)])[:-1]] if runs else bounds[:0]
    moved = np.full(len(previous.entries), -1, dtype=np.int64)
    added = _Sums.of_segments(store, plan.added)
    position = {id(s): i for i, s in enumerate(plan.added)}
    sort_keys: list[Sequence[str]] = []
    new_rows, added_postings = [], []
    slot_parts, code_parts = [], []
    centroid_parts: list[tuple[int, int] | NDArray[np.float32]] = []
    length_parts: list[NDArray[np.signedinteger[Any]]] = []
    for piece, start in zip(plan.pieces, starts.tolist(), strict=True):
        if isinstance(piece, Segment):
            rows = np.arange(start, start + len(piece), dtype=np.int64)
            new_rows.append(rows)
            added_postings.append((start, piece.postings))
            slot_parts.append(piece.slots)
            length_parts.append(piece.postings.lengths)
            code_parts.append(piece.scope_codes)
            i = position[id(piece)]
            centroid_parts.append(added.centroids[i : i + 1])
            sort_keys.append((piece.sort_key,))
        else:
            first, last = int(old[piece[0]]), int(old[piece[1]])
            moved[first:last] = np.arange(start, start + last - first, dtype=np.int64)
            slot_parts.append(previous.slots[first:last])
            length_parts.append(previous.lengths[first:last])
            code_parts.append(previous.scope_codes[first:last])
            centroid_parts.append(piece)
            sort_keys.append(previous.sort_keys[piece[0] : piece[1]])
    slots = _stack(slot_parts, (0,), np.int64)
    lengths = _stack(length_parts, (0,), np.int64)
    fixed = previous.fixed_sum - _Sums.of_segments(store, plan.gone).fixed + added.fixed
    vectors = VectorIndex.spliced(
        previous.vectors,
        store,
        partition=partition,
        keys=PerRow(ordered, bounds, keys_of),
        slots=slots,
        removed=_stack([s.slots for s in plan.gone], (0,), np.int64),
        added=_stack(new_rows, (0,), np.int64),
        mean=fixed_mean(fixed, plan.total),
    )
    return Assembly(
        segments=ordered,
        bounds=bounds,
        entries=PerRow(ordered, bounds, entries_of),
        vectors=vectors,
        bm25=previous.bm25.spliced(moved, added_postings, lengths),
        filing=_spliced_literals(previous.filing, plan.gone, plan.added),
        scope_sets=space.scope_sets,
        scope_codes=_stack(code_parts, (0,), np.int32),
        catalogs=previous.catalogs if plan.in_place else _codes(ordered),
        catalog_codes=np.repeat(np.arange(len(ordered), dtype=np.int32), size),
        centroids=previous.centroids.spliced(centroid_parts, plan.gone_codes),
        spliced=True,
        slots=slots,
        lengths=lengths,
        fixed_sum=fixed,
        store_dtype=store.dtype,
        sort_keys=list(chain.from_iterable(sort_keys)),
    )


# Rows gathered and cast to float64 at once to sum segments: a copy that stays in the cache's
# reach (65,536 rows were 200 MB of float64 and 0.35 s more of a start-up at 100,000 tools;
# the sums are the same floats at any size, a segment is never split).
_SUM_ROWS = 4_096
# Past this many rows to sum, segments are summed by a sparse product (`_sparse_sums`).
_SPARSE_FROM = 65_536


@dataclass(frozen=True)
class _Sums:
    """Per segment, the direction of its vectors' sum (its centroid); and their sum, fixed
    point."""

    centroids: NDArray[np.float32]
    fixed: NDArray[np.int64]

    @classmethod
    def of_segments(cls, store: NDArray[np.floating[Any]], segments: Sequence[Segment]) -> _Sums:
        sizes = np.fromiter(map(len, segments), dtype=np.int64, count=len(segments))
        return cls.of(store, _stack([s.slots for s in segments], (0,), np.int64), _bounds(sizes))

    @classmethod
    def of(
        cls,
        store: NDArray[np.floating[Any]],
        slots: NDArray[np.int64],
        bounds: NDArray[np.int64],
        out: NDArray[np.float32] | None = None,
    ) -> _Sums:
        """The segments whose rows are `slots[bounds[i]:bounds[i + 1]]` (none empty); their
        centroids written to `out` when given (zeros, one row a segment)."""
        dimension = int(store.shape[1])
        many = int(bounds[-1] - bounds[0]) >= _SPARSE_FROM
        centroids = np.zeros((len(bounds) - 1, dimension), dtype=np.float32) if out is None else out
        fixed = np.zeros(dimension, dtype=np.int64)
        first = 0
        while first < len(bounds) - 1:
            # Whole segments, about _SUM_ROWS rows at a time.
            last = int(np.searchsorted(bounds, bounds[first] + _SUM_ROWS, side="right")) - 1
            last = min(max(last, first + 1), len(bounds) - 1)
            rows = store[slots[bounds[first] : bounds[last]]]
            starts = bounds[first : last + 1] - bounds[first]
            sums = (
                _sparse_sums(rows, starts)
                if many
                else np.add.reduceat(rows, starts[:-1], axis=0, dtype=np.float64)
            )
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            centroids[first:last] = sums / np.where(norms > 0, norms, 1.0)
            fixed += np.rint(sums * FIXED_POINT).astype(np.int64).sum(axis=0)
            first = last
        return cls(centroids, fixed)


def _sparse_sums(rows: NDArray[np.floating[Any]], starts: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each run's rows added in order, the floats np.add.reduceat gives (each value cast to
    float64, then added one after another), by one sparse product: reduceat down the rows of
    a million tools took 4.4 s of a start-up, the cast and the product 2.2 s. SciPy is
    imported here, not with the module: its import (about 0.3 s) would add to every start."""
    from scipy.sparse import csr_matrix

    values = rows.astype(np.float64)
    indicator = csr_matrix(
        (np.ones(len(values)), np.arange(len(values)), starts),
        shape=(len(starts) - 1, len(values)),
    )
    return np.asarray(indicator @ values)


def _bounds(sizes: NDArray[np.int64]) -> NDArray[np.int64]:
    """Where each of consecutive runs of these sizes starts, and one past the last."""
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


def _codes(ordered: Sequence[Segment]) -> dict[str, int]:
    return {s.name: code for code, s in enumerate(ordered)}


def _spliced_literals(
    filing: Literals | Future[Literals], gone: Sequence[Segment], added: Sequence[Segment]
) -> Literals | Future[Literals]:
    """The previous name lookup without `gone` and with `added`. While the previous one is
    still being filed (the first changes after a start: 8.7 s at a million tools), the splice
    is queued behind it on the filing thread instead of waiting for it."""
    removed, removed_names = _spelled(gone), [s.name for s in gone]
    new, new_names = _spelled(added), [s.name for s in added]
    if isinstance(filing, Literals):
        return filing.spliced(removed, removed_names, new, new_names)
    if filing.done():
        return filing.result().spliced(removed, removed_names, new, new_names)
    return _FILING.submit(lambda: filing.result().spliced(removed, removed_names, new, new_names))


def _spelled(segments: Sequence[Segment]) -> list[Spelled]:
    return [(t.tool, t.spelling) for s in segments for t in s.tools]


def _stack(
    parts: Sequence[NDArray[Any]], empty: tuple[int, ...], dtype: type[Scalar]
) -> NDArray[Scalar]:
    """`parts` joined as one contiguous array of `dtype` (narrower parts widened)."""
    if not parts:
        return np.zeros(empty, dtype=dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype=dtype)
