"""Exact and IVF vector search: same answers where it matters, lists remembered by key."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

from indexer.retrieval import vector_index
from indexer.retrieval.scaling import Scaling
from indexer.retrieval.vector_index import Partition, VectorIndex, list_count


def _corpus(n: int, seed: int = 3) -> np.ndarray:
    """Clustered unit vectors, like tool embeddings (servers are topics)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, 64)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, n)] + 0.6 * rng.standard_normal((n, 64)).astype(
        np.float32
    )
    unit: np.ndarray = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return unit


def test_exact_search_orders_by_score_and_respects_the_allowed_rows() -> None:
    vectors = _corpus(500)
    index = VectorIndex(vectors)
    query = vectors[7]
    scores, rows = index.search(query, 5)
    expected = np.argsort(-(vectors @ query), kind="stable")[:5]
    assert rows[0].tolist() == expected.tolist()
    assert np.all(np.diff(scores[0]) <= 0)
    allowed = np.zeros(500, dtype=bool)
    allowed[[3, 9, 11]] = True
    scores, rows = index.search(query, 5, allowed)
    assert sorted(rows[0][:3].tolist()) == [3, 9, 11]
    assert rows[0][3:].tolist() == [-1, -1]
    assert np.isinf(scores[0][3:]).all()


def test_ivf_recall_at_10_against_exact_search_is_high() -> None:
    vectors = _corpus(6000)
    keys = [f"k{i}" for i in range(len(vectors))]
    exact = VectorIndex(vectors)
    approximate = VectorIndex(vectors, partition=Partition.train(vectors), keys=keys)
    assert approximate.approximate
    assert not exact.approximate
    queries = _corpus(100, seed=9)
    best, _ = exact.search(queries, 10)
    found, _ = approximate.search(queries, 10)
    # Recall by score, so that equal vectors count as the same answer.
    recall = np.mean([(found[i] >= best[i][-1] - 1e-6).sum() / 10 for i in range(len(queries))])
    assert recall >= 0.95


def test_ivf_search_only_returns_allowed_rows() -> None:
    vectors = _corpus(3000)
    index = VectorIndex(
        vectors, partition=Partition.train(vectors), keys=[str(i) for i in range(3000)]
    )
    allowed = np.zeros(3000, dtype=bool)
    allowed[::7] = True
    _, rows = index.search(vectors[:20], 10, allowed)
    assert (rows >= 0).all()
    assert allowed[rows].all()


def test_an_ivf_search_given_fewer_probes_reads_only_the_lists_nearest_the_query() -> None:
    vectors = _corpus(6000)
    partition = Partition.train(vectors)
    keys = [f"k{i}" for i in range(len(vectors))]
    index = VectorIndex(vectors, partition=partition, keys=keys)
    lists = partition.assign(keys, vectors)
    queries = _corpus(20, seed=9)
    _, nearest = partition.quantizer.search(queries, 2)
    _, one = index.search(queries, 10, probes=1)
    _, two = index.search(queries, 10, probes=2)
    for i in range(len(queries)):
        assert set(lists[one[i][one[i] >= 0]].tolist()) <= {int(nearest[i][0])}
        assert set(lists[two[i][two[i] >= 0]].tolist()) <= set(nearest[i].tolist())
    # No more lists than the index probes by default, however many are asked for.
    assert np.array_equal(index.search(queries, 10, probes=10_000)[1], index.search(queries, 10)[1])


def test_intents_search_like_their_own_searches_exactly_or_through_fewer_lists() -> None:
    vectors = _corpus(6000)
    keys = [f"k{i}" for i in range(len(vectors))]
    queries = _corpus(3, seed=9)
    exact = VectorIndex(vectors)
    assert np.array_equal(exact.search_intents(queries, 10)[1], exact.search(queries, 10)[1])
    approximate = VectorIndex(vectors, partition=Partition.train(vectors), keys=keys)
    _, rows = approximate.search_intents(queries, 10)
    assert np.array_equal(rows[:1], approximate.search(queries[:1], 10)[1])
    clauses = approximate.search(queries[1:], 10, probes=vector_index.CLAUSE_PROBES)[1]
    assert np.array_equal(rows[1:], clauses)


class _CountingQuantizer:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[int] = []

    def search(self, x: np.ndarray, k: int) -> Any:
        self.calls.append(len(x))
        return self.inner.search(x, k)


def test_lists_are_assigned_once_per_key() -> None:
    vectors = _corpus(2000)
    partition = Partition.train(vectors)
    keys = [f"doc{i}" for i in range(2000)]
    first = partition.assign(keys, vectors)
    counting = _CountingQuantizer(partition.quantizer)
    partition.quantizer = counting  # type: ignore[assignment]
    again = partition.assign([*keys[:100], "new"], np.vstack([vectors[:100], vectors[:1]]))
    assert counting.calls == [1]  # only the new key
    assert again[:100].tolist() == first[:100].tolist()


def test_the_corpus_spread_comes_from_moments_without_scoring_every_row() -> None:
    vectors = _corpus(4000)
    index = VectorIndex(
        vectors, partition=Partition.train(vectors), keys=[str(i) for i in range(4000)]
    )
    query = _corpus(1, seed=5)[0]
    spread = index.score_spread(query, Scaling.Z)
    mean, std = spread.mean, spread.std
    scores = vectors @ query
    assert mean == pytest.approx(float(scores.mean()), abs=1e-5)
    assert std == pytest.approx(float(scores.std()), rel=1e-4)


@pytest.mark.parametrize(("size", "lists"), [(1, 16), (10_000, 200), (100_000, 632), (10**8, 4096)])
def test_list_count_grows_with_the_square_root(size: int, lists: int) -> None:
    assert list_count(size) == lists


def test_a_partition_fits_within_a_factor_of_four() -> None:
    partition = Partition(_corpus(16), trained_on=10_000)
    assert partition.fits(2_500)
    assert partition.fits(40_000)
    assert not partition.fits(2_499)
    assert not partition.fits(40_001)


def _kernels_under(coretype: str) -> str:
    # The kernel set is picked when OpenBLAS loads, so each one needs its own process.
    env = {**os.environ, "OPENBLAS_CORETYPE": coretype}
    code = "from indexer.retrieval.vector_index import blas_kernels; print(blas_kernels())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_reports_name_the_blas_kernels_numpy_runs() -> None:
    plain, wide = _kernels_under("Prescott"), _kernels_under("Haswell")
    assert "numpy: openblas Haswell" in wide.split(", ")
    # OpenBLAS names Prescott's kernel set after the core it shares it with.
    assert any(part.startswith("numpy: openblas ") for part in plain.split(", "))
    assert plain != wide
    assert wide.split(", ") == sorted(wide.split(", "))


def test_an_index_over_a_float16_store_reads_float32_rows_and_finds_the_same_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index, "_ADD_PART", 1000)  # lists filled in six parts
    vectors = _corpus(6000)
    half = vectors.astype(np.float16)
    keys = [f"k{i}" for i in range(len(vectors))]
    partition = Partition.train(vectors)
    full = VectorIndex(vectors, partition=partition, keys=keys)
    slots = np.arange(len(half), dtype=np.int64)
    compact = VectorIndex(half, slots=slots, partition=partition, keys=keys)
    assert compact.rows(np.arange(10)).dtype == np.float32  # a consecutive run of slots
    assert compact.rows(np.asarray([5, 1, 9])).dtype == np.float32  # a gather
    assert np.allclose(compact.rows(np.arange(10)), vectors[:10], atol=1e-3)
    assert compact.matrix.dtype == np.float32
    queries = _corpus(50, seed=9)
    found_full, rows_full = full.search(queries, 10)
    found_half, rows_half = compact.search(queries, 10)
    assert found_half.dtype == np.float32
    assert np.allclose(found_half, found_full, atol=2e-3)
    # Only near-ties can swap places: the sets of rows found are nearly all the same.
    pairs = zip(rows_full, rows_half, strict=True)
    overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in pairs])
    assert overlap >= 0.98
    # Lists filled in parts hold every vector once.
    assert compact.list_bytes() == full.list_bytes()


@pytest.mark.parametrize("share", [1.0, 0.0], ids=["layered", "folded"])
def test_a_chain_of_splices_finds_what_an_index_built_whole_finds(
    monkeypatch: pytest.MonkeyPatch, share: float
) -> None:
    # share 1.0: every change goes to the layer over the first base; 0.0: every change folds.
    monkeypatch.setattr(vector_index, "LAYER_SHARE", share)
    store = _corpus(3000)
    keys = [f"k{slot}" for slot in range(len(store))]
    partition = Partition.train(store[:2000])
    rng = np.random.default_rng(5)
    live = list(range(1500))
    index = VectorIndex(
        store, slots=np.asarray(live), partition=partition, keys=[keys[s] for s in live]
    )
    queries = _corpus(40, seed=11)
    free = 1500
    for _ in range(5):
        gone = set(rng.choice(live, 60, replace=False).tolist())
        live = [slot for slot in live if slot not in gone]
        for _ in range(45):
            live.insert(int(rng.integers(len(live) + 1)), free)
            free += 1
        slots = np.asarray(live, dtype=np.int64)
        row_keys = [keys[s] for s in live]
        added = np.flatnonzero(slots >= free - 45)
        index = VectorIndex.spliced(
            index,
            store,
            slots=slots,
            partition=partition,
            keys=row_keys,
            removed=np.asarray(sorted(gone), dtype=np.int64),
            added=added,
        )
        whole = VectorIndex(store, slots=slots, partition=partition, keys=row_keys)
        assert (index.layer_size > 0) == (share == 1.0)
        allowed = rng.random(len(live)) < 0.5
        for mask in (None, allowed):
            found, rows = index.search(queries, 10, mask)
            expected, expected_rows = whole.search(queries, 10, mask)
            assert rows.tolist() == expected_rows.tolist()
            assert np.array_equal(found, expected)
            if mask is not None:
                assert mask[rows[rows >= 0]].all()


def test_a_partition_computes_each_keys_list_once_and_hands_them_over_to_be_stored() -> None:
    vectors = np.random.default_rng(3).standard_normal((400, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    partition = Partition.train(vectors)
    keys = [f"k{i}" for i in range(400)]
    lists = partition.assign(keys, vectors)
    unsaved = partition.take_unsaved()
    assert unsaved == dict(zip(keys, lists.tolist(), strict=True))
    assert partition.take_unsaved() == {}
    # The same centroids name the same partition; its lists, remembered, are not computed.
    again = Partition(partition.centroids.copy(), partition.trained_on)
    assert again.digest == partition.digest
    assert Partition(partition.centroids * 2, partition.trained_on).digest != partition.digest
    assert again.remember({**unsaved, "bad": len(again.centroids)}) == 400
    elsewhere = np.zeros_like(vectors)  # lists are not computed from these
    np.testing.assert_array_equal(again.assign(keys, elsewhere), lists)
    assert again.take_unsaved() == {}
    # A list number the partition does not have was ignored: the key is computed.
    assert again.assign(["bad"], vectors[:1]).tolist() == lists[:1].tolist()
    assert again.take_unsaved() == {"bad": int(lists[0])}
