"""What a store keeps of the vectors, against both backends: embeddings, IVF partitions and
each vector's IVF list."""

from __future__ import annotations

import numpy as np

from registry.store import Store
from tests.registry.conftest import MODEL, vector


def test_most_of_the_stored_vectors_read_at_once_are_those_asked_for(store: Store) -> None:
    stored = {f"h{i}": vector(i) for i in range(1_000)}
    store.put_embeddings(MODEL, stored)
    store.put_embeddings("model-b", {"h1": vector(5_000)})
    # Looked up one chunk at a time, and (most of the table) read in one pass.
    for wanted in ([f"h{i}" for i in range(0, 1_000, 50)], [f"h{i}" for i in range(900)]):
        got = store.embeddings(MODEL, [*wanted, "missing", *wanted[:3]])
        assert sorted(got) == sorted(wanted)
        for key in wanted:
            np.testing.assert_array_equal(got[key], stored[key])


def test_a_read_of_most_of_a_large_table_returns_exactly_those_asked_for(store: Store) -> None:
    # Past both backends' lookup chunks: the pass over the whole table (SQLite: 500, in the
    # table's order; PostgreSQL: 5,000, through a server-side cursor).
    stored = {f"h{i}": vector(i) for i in range(6_000)}
    store.put_embeddings(MODEL, stored)
    store.put_embeddings("model-b", {"h2": vector(9_000), "other": vector(9_001)})
    wanted = [f"h{i}" for i in range(0, 6_000) if i % 7]
    got = store.embeddings(MODEL, [*wanted, "other", "missing"])
    assert sorted(got) == sorted(wanted)
    for key in (wanted[0], wanted[2_500], wanted[-1]):
        np.testing.assert_array_equal(got[key], stored[key])


def test_partitions_are_kept_per_model(store: Store) -> None:
    centroids = np.arange(24, dtype=np.float32).reshape(3, 8)
    store.put_partition(MODEL, centroids, 1_000)
    store.put_partition(MODEL, centroids * 2, 4_000)
    got = store.partition(MODEL)
    assert got is not None
    np.testing.assert_array_equal(got[0], centroids * 2)
    assert got[1] == 4_000
    assert store.partition("model-b") is None


def test_ivf_lists_are_read_back_under_the_partition_that_assigned_them(store: Store) -> None:
    store.put_ivf_lists(MODEL, "p1", {"h1": 0, "h2": 3})
    store.put_ivf_lists(MODEL, "p1", {"h3": 2_000})
    store.put_ivf_lists("model-b", "p1", {"h1": 7})
    assert store.ivf_lists(MODEL, "p1") == {"h1": 0, "h2": 3, "h3": 2_000}
    # Lists assigned under another partition replace the old partition's.
    store.put_ivf_lists(MODEL, "p2", {"h2": 5})
    assert store.ivf_lists(MODEL, "p1") == {}
    assert store.ivf_lists(MODEL, "p2") == {"h2": 5}
    assert store.ivf_lists("model-b", "p1") == {"h1": 7}
