"""What an approximate (IVF) first stage scores: a request's best rows by meaning and by words,
and the best-matching catalogs whole when they are small enough."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from indexer.model import Tool
from indexer.retrieval import first_stage as stage
from indexer.retrieval.first_stage import Request, first_stage
from indexer.retrieval.segment import IndexedTool, Segment, SegmentSpace
from indexer.retrieval.tool_index import Eligible, ToolIndex
from indexer.retrieval.vector_index import CLAUSE_PROBES, PROBES, Partition, VectorIndex

DIMENSION = 8


def unit(rng: np.random.Generator, rows: int) -> NDArray[np.float32]:
    vectors = rng.standard_normal((rows, DIMENSION)).astype(np.float32)
    return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)


def catalog(space: SegmentSpace, name: str, vectors: NDArray[np.float32]) -> Segment:
    entries = [
        IndexedTool(
            tool=Tool(catalog=name, name=f"tool_{i}", description="does a thing", input_schema={}),
            required_scopes=frozenset(),
            catalog_title=name,
            catalog_version="1",
            catalog_revision=1,
        )
        for i in range(len(vectors))
    ]
    keys = [f"{name}-{i}" for i in range(len(vectors))]
    documents = [f"{name} tool {i} does a thing" for i in range(len(vectors))]
    return space.segment(name, entries, vectors, keys, documents)


def scored_rows(big_tools: int) -> tuple[ToolIndex, NDArray[np.int64]]:
    """The rows the first stage scores for a request near a small catalog (5 tools) and a big
    one (`big_tools` tools)."""
    rng = np.random.default_rng(3)
    toward = unit(rng, 1)[0]

    def near(rows: int) -> NDArray[np.float32]:
        vectors = toward + 0.3 * unit(rng, rows)
        return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), np.float32)

    space = SegmentSpace(DIMENSION)
    segments = [catalog(space, "big", near(big_tools)), catalog(space, "small", near(5))]
    partition = Partition.train(unit(np.random.default_rng(0), 64))
    index = ToolIndex(segments, 1, space=space, partition=partition)
    request = Request(texts=["zzz"], vectors=[toward])
    return index, first_stage(index, request, Eligible.whole(index.eligible().view)).rows


def test_a_small_best_matching_catalog_is_scored_whole() -> None:
    index, rows = scored_rows(big_tools=40)
    ids = {index.entries[int(row)].id for row in rows}
    assert {f"small/tool_{i}" for i in range(5)} <= ids
    assert {f"big/tool_{i}" for i in range(40)} <= ids


def test_a_catalog_past_the_expansion_bound_brings_only_its_best_rows() -> None:
    big = stage.CATALOG_EXPANSION_ROWS + 50
    index, rows = scored_rows(big_tools=big)
    from_big = [row for row in rows if index.entries[int(row)].tool.catalog == "big"]
    # Its best rows by meaning (the words match nothing): not the whole catalog.
    assert 0 < len(from_big) <= stage.DENSE_CANDIDATES


def test_a_clauses_vectors_probe_fewer_lists_than_the_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index, _ = scored_rows(big_tools=40)
    probed: list[tuple[int, int | None]] = []
    search = VectorIndex.search

    def spy(self: VectorIndex, queries: NDArray[np.float32], k: int, *args, **kwargs):  # type: ignore[no-untyped-def]
        probed.append((len(np.atleast_2d(queries)), kwargs.get("probes")))
        return search(self, queries, k, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "search", spy)
    rng = np.random.default_rng(5)
    request = Request(texts=["zzz", "yyy", "xxx"], vectors=list(unit(rng, 3)))
    first_stage(index, request, Eligible.whole(index.eligible().view))
    # The request's own vector at the index's probes, its two clauses' at CLAUSE_PROBES.
    assert probed == [(1, None), (2, CLAUSE_PROBES)]
    assert CLAUSE_PROBES < PROBES
