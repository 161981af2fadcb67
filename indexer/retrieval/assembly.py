"""Putting a snapshot's arrays together from its catalogs' segments: whole, or spliced from
the previous snapshot's when few catalogs changed.

Either way the result is the same arrays in the same row order (tools by id), so a spliced
snapshot ranks exactly like one built from nothing; splicing only saves the work: the BM25
postings are moved and patched instead of sorted again, the IVF lists are copied and patched
instead of filled again, and nothing is tokenised or normalised twice.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from indexer.retrieval.lexical import ArrayBM25
from indexer.retrieval.literal import Literals, Spelled
from indexer.retrieval.segment import IndexedTool, Segment, SegmentSpace
from indexer.retrieval.vector_index import Partition, VectorIndex

# A change touching more than this share of the rows is built whole: splicing would copy as
# much and patch more.
SPLICE_SHARE = 0.5
Scalar = TypeVar("Scalar", bound=np.generic)
# Files the name lookups of whole builds, one at a time, off the builder's thread.
_FILING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="capreg-literals")


@dataclass(kw_only=True, frozen=True)
class Assembly:
    """A snapshot's rows: every segment's tools in id order, and the arrays over them."""

    segments: tuple[Segment, ...]
    # Row where each segment starts (and one past the last row).
    bounds: NDArray[np.int64]
    entries: tuple[IndexedTool, ...]
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
    centroids: NDArray[np.float32]
    spliced: bool

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
        code = self.catalogs.get(tool_id.partition("/")[0])
        if code is None:
            return None
        row = self.segments[code].rows.get(tool_id)
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
    ordered = tuple(sorted((s for s in segments if len(s)), key=lambda s: s.sort_key))
    sizes = np.asarray([len(s) for s in ordered], dtype=np.int64)
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    total = int(bounds[-1])
    dimension = space.dimension
    slots = _stack([s.slots for s in ordered], (0,), np.int64)
    keys = list(chain.from_iterable(s.keys for s in ordered))
    # Summed catalog by catalog in row order, however the snapshot is made: the same mean.
    mean = functools.reduce(np.add, (s.vector_sum for s in ordered), np.zeros(dimension))
    mean = mean / max(total, 1)
    store = space.vectors
    lengths = _stack([s.postings.lengths for s in ordered], (0,), np.int64)

    before = {id(s) for s in previous.segments} if previous is not None else set()
    now = {id(s) for s in ordered}
    new_rows = [
        np.arange(start, start + len(s), dtype=np.int64)
        for s, start in zip(ordered, bounds.tolist(), strict=False)
        if id(s) not in before
    ]
    changed = sum(len(r) for r in new_rows)
    if previous is not None:
        changed += sum(len(s) for s in previous.segments if id(s) not in now)
    splice = previous is not None and changed <= SPLICE_SHARE * max(total, len(previous.entries))

    literals: Literals | Future[Literals]
    if previous is not None and splice:
        gone = [s for s in previous.segments if id(s) not in now]
        added = [s for s in ordered if id(s) not in before]
        vectors = VectorIndex.spliced(
            previous.vectors,
            store,
            partition=partition,
            keys=keys,
            slots=slots,
            removed=_stack([s.slots for s in gone], (0,), np.int64),
            added=_stack(new_rows, (0,), np.int64),
            mean=mean,
        )
        literals = _spliced_literals(previous.filing, gone, added)
        bm25 = previous.bm25.spliced(
            _moved_rows(previous, ordered, bounds),
            [
                (start, s.postings)
                for s, start in zip(ordered, bounds.tolist(), strict=False)
                if id(s) not in before
            ],
            lengths,
        )
    else:
        vectors = VectorIndex(store, slots=slots, partition=partition, keys=keys, mean=mean)
        bm25 = ArrayBM25.joined(space.vocabulary, [s.postings for s in ordered])
        literals = _FILING.submit(Literals, _spelled(ordered), [s.name for s in ordered])

    return Assembly(
        segments=ordered,
        bounds=bounds,
        entries=tuple(chain.from_iterable(s.entries for s in ordered)),
        vectors=vectors,
        bm25=bm25,
        filing=literals,
        scope_sets=space.scope_sets,
        scope_codes=_stack([s.scope_codes for s in ordered], (0,), np.int32),
        catalogs={s.name: code for code, s in enumerate(ordered)},
        catalog_codes=np.repeat(np.arange(len(ordered), dtype=np.int32), sizes),
        centroids=_stack([s.centroid[None, :] for s in ordered], (0, dimension), np.float32),
        spliced=splice,
    )


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
    return [(e.id, e.tool.name, e.function_name) for s in segments for e in s.entries]


def _moved_rows(
    previous: Assembly, ordered: Sequence[Segment], bounds: NDArray[np.int64]
) -> NDArray[np.int64]:
    """For each of `previous`' rows, its row among `ordered` (-1: its catalog changed)."""
    start_of = {id(s): start for s, start in zip(ordered, bounds.tolist(), strict=False)}
    old_sizes = np.diff(previous.bounds)
    new_starts = np.asarray(
        [start_of.get(id(s), -1) for s in previous.segments], dtype=np.int64
    ).reshape(-1)
    kept = np.repeat(new_starts >= 0, old_sizes)
    shift = np.repeat(new_starts - previous.bounds[:-1], old_sizes)
    rows = np.arange(len(previous.entries), dtype=np.int64) + shift
    return np.where(kept, rows, -1)


def _stack(
    parts: Sequence[NDArray[Scalar]], empty: tuple[int, ...], dtype: type[Scalar]
) -> NDArray[Scalar]:
    if not parts:
        return np.zeros(empty, dtype=dtype)
    return np.ascontiguousarray(np.concatenate(parts), dtype=dtype)
