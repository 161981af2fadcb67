"""A snapshot spliced from the previous one ranks exactly like one built from nothing."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from indexer.model import Tool
from indexer.retrieval import assembly, literal
from indexer.retrieval.first_stage import Request, first_stage
from indexer.retrieval.fusion import Levers
from indexer.retrieval.pipeline import learned_inputs, rank
from indexer.retrieval.scaling import Scaling
from indexer.retrieval.segment import IndexedTool, Segment, SegmentSpace
from indexer.retrieval.tool_index import Eligible, ToolIndex, Visibility, everything
from indexer.retrieval.vector_index import Partition

DIMENSION = 8
WORDS = ["invoice", "ticket", "refund", "deploy", "calendar", "email", "user", "report", "sync"]
SCOPE_SETS = [frozenset(), frozenset({"a:read"}), frozenset({"b:read"})]
CATALOG_NAMES = ["ab", "ab-c", "ab0", "crm", "hr", "x"]
QUERIES = ["refund the invoice", "deploy and email the report", "sync_user_7 calendar", "ab0"]

# One change: (catalog, tool count, seed) registers or replaces; a count of 0 deletes.
changes = st.lists(
    st.tuples(st.sampled_from(CATALOG_NAMES), st.integers(0, 6), st.integers(0, 10_000)),
    min_size=1,
    max_size=12,
)


def unit(rng: np.random.Generator, rows: int) -> NDArray[np.float32]:
    vectors = rng.standard_normal((rows, DIMENSION)).astype(np.float32)
    return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)


def make_segment(space: SegmentSpace, catalog: str, count: int, seed: int) -> Segment:
    rng = np.random.default_rng(seed)
    entries, documents = [], []
    for i in range(count):
        words = " ".join(rng.choice(WORDS, size=4).tolist())
        name = f"{rng.choice(WORDS)}_{i}" if i % 2 else f"sync_user_{i + seed % 3}"
        tool = Tool(catalog=catalog, name=name, description=words, input_schema={})
        entries.append(
            IndexedTool(
                tool=tool,
                required_scopes=SCOPE_SETS[int(rng.integers(len(SCOPE_SETS)))],
                catalog_title=catalog,
                catalog_version="1",
                catalog_revision=1,
            )
        )
        documents.append(f"{catalog}: {name} {words}")
    keys = [f"{seed}-{i}" for i in range(count)]
    return space.segment(catalog, entries, unit(rng, count), keys, documents)


def answers(index: ToolIndex, visible: Visibility, scaling: Scaling) -> list[object]:
    rng = np.random.default_rng(1)
    found: list[object] = []
    for query in QUERIES:
        vectors = list(unit(rng, 2))
        request = Request(texts=[query, query], vectors=vectors, levers=Levers(scaling=scaling))
        hits = rank(index, request, 10, eligible=index.eligible(visible)).hits
        found.append([(h.entry.id, h.score, h.similarity) for h in hits])
        dense = index.search(vectors[0], 5, visible=visible)
        found.append([(h.entry.id, h.score) for h in dense])
    found.append([index.get(e.id, visible) is not None for e in index.entries])
    return found


def only_a(required: frozenset[str]) -> bool:
    return required <= {"a:read"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=changes, approximate=st.booleans(), scaling=st.sampled_from(list(Scaling)))
def test_a_spliced_snapshot_ranks_exactly_like_one_built_from_scratch(
    changes: list[tuple[str, int, int]], approximate: bool, scaling: Scaling
) -> None:
    space = SegmentSpace(DIMENSION)
    partition = Partition.train(unit(np.random.default_rng(0), 64)) if approximate else None
    live: dict[str, Segment] = {}
    index = ToolIndex([], 0, space=space, partition=partition)
    for generation, (catalog, count, seed) in enumerate(changes, start=1):
        if count:
            live[catalog] = make_segment(space, catalog, count, seed)
        else:
            live.pop(catalog, None)
        index = ToolIndex(
            list(live.values()), generation, space=space, partition=partition, previous=index
        )
        scratch = ToolIndex(list(live.values()), generation, space=space, partition=partition)
        assert [e.id for e in index.entries] == [e.id for e in scratch.entries]
        assert np.array_equal(index.centroids.all, scratch.centroids.all)
        assert np.array_equal(index.centroids.fixed, scratch.centroids.fixed)
        for visible in (everything, only_a):
            assert answers(index, visible, scaling) == answers(scratch, visible, scaling)


def test_a_one_catalog_change_is_spliced_and_the_old_snapshot_still_answers() -> None:
    space = SegmentSpace(DIMENSION)
    partition = Partition.train(unit(np.random.default_rng(0), 64))
    segments = [make_segment(space, name, 6, seed) for seed, name in enumerate(CATALOG_NAMES)]
    before = ToolIndex(segments, 1, space=space, partition=partition)
    expected = answers(before, everything, Scaling.MEAN_MAX)
    changed = [*segments[:-1], make_segment(space, CATALOG_NAMES[-1], 3, 99)]
    after = ToolIndex(changed, 2, space=space, partition=partition, previous=before)
    assert after.spliced
    assert len(after) == len(before) - 3
    assert answers(before, everything, Scaling.MEAN_MAX) == expected


def test_rows_left_out_rank_exactly_as_if_their_catalogs_were_never_registered() -> None:
    # The training's unanswerable requests leave gold catalogs out this way: the learned
    # stage must see what a registry without those catalogs would show.
    space = SegmentSpace(DIMENSION)
    segments = [make_segment(space, name, 5, seed) for seed, name in enumerate(CATALOG_NAMES)]
    whole = ToolIndex(segments, 1, space=space)
    left_out = {"crm", "ab0"}
    without = ToolIndex([s for s in segments if s.name not in left_out], 1, space=space)
    absent = np.asarray([e.tool.catalog in left_out for e in whole.entries])
    rng = np.random.default_rng(3)
    for query in QUERIES:
        request = Request(texts=[query, query], vectors=list(unit(rng, 2)))
        kept_stage = first_stage(whole, request, Eligible.whole(whole.view_without(absent)))
        built_stage = first_stage(without, request, without.eligible())
        kept, kept_features = learned_inputs(whole, request, kept_stage)
        built, built_features = learned_inputs(without, request, built_stage)
        assert kept.ids == built.ids
        assert kept.front == built.front
        np.testing.assert_array_equal(kept_features, built_features)
        np.testing.assert_array_equal(
            kept_stage.ranking.scores[kept.positions], built_stage.ranking.scores[built.positions]
        )


def test_a_change_does_not_wait_for_the_name_lookup_still_being_filed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    space = SegmentSpace(DIMENSION)
    segments = [make_segment(space, name, 6, seed) for seed, name in enumerate(CATALOG_NAMES)]
    release = threading.Event()
    released: list[bool] = []
    real = literal.Literals

    class SlowFiling(real):  # type: ignore[misc,valid-type]  # the real lookup, filed late
        def __init__(self, *args: Any) -> None:
            # False when it waited out the timeout: the change waited for the filing.
            released.append(release.wait(timeout=5))
            super().__init__(*args)

    monkeypatch.setattr(assembly, "Literals", SlowFiling)
    before = ToolIndex(segments, 1, space=space)
    changed = [*segments[:-1], make_segment(space, CATALOG_NAMES[-1], 3, 99)]
    after = ToolIndex(changed, 2, space=space, previous=before)  # returns while filing
    assert after.spliced
    release.set()
    monkeypatch.setattr(assembly, "Literals", real)
    scratch = ToolIndex(changed, 3, space=space)
    assert answers(after, everything, Scaling.MEAN_MAX) == answers(
        scratch, everything, Scaling.MEAN_MAX
    )
    assert released == [True]


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_catalog_sums_are_the_same_floats_summed_either_way(dtype: type[np.floating]) -> None:
    # A whole build of many rows sums by a sparse product, a splice's few rows by reduceat:
    # the splice's fixed-point sum stays exact only if both give the same floats.
    rng = np.random.default_rng(4)
    store = rng.standard_normal((3000, DIMENSION)).astype(dtype)
    slots = rng.permutation(3000)[:2500].astype(np.int64)
    sizes = rng.integers(1, 40, size=200)
    sizes = sizes[np.cumsum(sizes) <= len(slots)]
    bounds = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(assembly, "_SPARSE_FROM", 0)
        sparse = assembly._Sums.of(store, slots, bounds)
    added = assembly._Sums.of(store, slots, bounds)  # below _SPARSE_FROM: reduceat
    assert np.array_equal(sparse.fixed, added.fixed)
    assert np.array_equal(sparse.centroids, added.centroids)
