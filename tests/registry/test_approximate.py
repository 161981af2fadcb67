"""The IVF path above the size threshold answers like the exact path below it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest

from registry.auth.scopes import Grants
from registry.config import SearchSettings
from registry.core import Registry
from registry.store import SqliteStore
from tests.conftest import CATALOGS, CountingEmbedder, copy_db

QUERIES = [
    "open a support ticket for a customer",
    "pay a supplier's bill, then email the finance team the receipt",
    "reset a user's two-factor authentication",
    "find a slot when everyone is free to meet and send the invitation",
    "which deployments failed last night? Roll back the broken one.",
    "bake a chocolate cake",
]


@pytest.fixture
def both(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> Iterator[tuple[Registry, Registry]]:
    for name in ("exact", "ivf"):
        (tmp_path / name).mkdir()
    stores = [SqliteStore(copy_db(sample_db, tmp_path / name)) for name in ("exact", "ivf")]
    exact = Registry(stores[0], embedder, settings=SearchSettings(result_cache_size=0))
    approximate = Registry(
        stores[1], embedder, settings=SearchSettings(result_cache_size=0, approximate_from=1)
    )
    exact.load()
    approximate.load()
    assert approximate.index.vectors.approximate
    assert not exact.index.vectors.approximate
    yield exact, approximate
    for store in stores:
        store.close()


@pytest.mark.parametrize(
    "retriever", ["default", "dense", "hybrid-no-cut", "hybrid-no-catalog", "hybrid-z"]
)
@pytest.mark.parametrize("limit", [0, 5, 20])
def test_the_ivf_path_ranks_like_the_exact_path(
    both: tuple[Registry, Registry], retriever: str, limit: int
) -> None:
    exact, approximate = both
    for query in QUERIES:
        want = exact.search(query, limit, retriever=retriever)
        got = approximate.search(query, limit, retriever=retriever)
        assert [h.entry.id for h in got.hits][:5] == [h.entry.id for h in want.hits][:5], query
        np.testing.assert_allclose(
            [h.score for h in got.hits[:5]], [h.score for h in want.hits[:5]], atol=1e-3
        )
        assert got.weak_match == want.weak_match


def test_the_ivf_path_only_returns_what_the_caller_may_see(
    both: tuple[Registry, Registry],
) -> None:
    _, approximate = both
    viewer = Grants.parse(["support:read"])
    for query in QUERIES:
        hits = approximate.search(query, 20, viewer=viewer).hits
        assert hits
        assert all(viewer.allows(h.entry.required_scopes) for h in hits)


def test_a_restricted_caller_gets_the_same_scores_on_both_paths(
    both: tuple[Registry, Registry],
) -> None:
    # The scale's best is the best tool the caller may see, on both paths.
    viewer = Grants.parse(["support:read", "hr:read"])
    exact, approximate = both
    for query in QUERIES:
        want = exact.search(query, 10, viewer=viewer).hits
        got = approximate.search(query, 10, viewer=viewer).hits
        assert [h.entry.id for h in got] == [h.entry.id for h in want], query
        np.testing.assert_allclose([h.score for h in got], [h.score for h in want], atol=1e-3)


def test_the_partition_is_stored_and_reused_after_a_restart(
    both: tuple[Registry, Registry], embedder: CountingEmbedder
) -> None:
    _, approximate = both
    store = approximate.writer._store
    stored = store.partition(embedder.model_id)
    assert stored is not None
    centroids, trained_on = stored
    assert trained_on == len(approximate.index)
    again = Registry(store, embedder, settings=SearchSettings(approximate_from=1))
    again.load()
    assert again.writer.partition is not None
    np.testing.assert_array_equal(again.writer.partition.centroids, centroids)


def test_each_vectors_ivf_list_is_stored_and_read_back_not_computed_after_a_restart(
    both: tuple[Registry, Registry], embedder: CountingEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, approximate = both
    store = approximate.writer._store
    partition = approximate.writer.partition
    assert partition is not None
    stored = store.ivf_lists(embedder.model_id, partition.digest)
    # Every document of the index, each under the list the running partition gave it.
    keys = {key for segment in approximate.index.segments for key in segment.keys}
    assert set(stored) == keys
    assert stored == {key: partition.assign([key], np.zeros((1, 1), np.float32))[0] for key in keys}
    searched: list[int] = []
    real_search = faiss.IndexFlatIP.search

    def counted(self: faiss.IndexFlatIP, x: np.ndarray, k: int, *args: object) -> object:
        searched.append(len(x))
        return real_search(self, x, k, *args)

    monkeypatch.setattr(faiss.IndexFlatIP, "search", counted)
    again = Registry(store, embedder, settings=SearchSettings(approximate_from=1))
    again.load()
    assert searched == []  # no vector's list was computed
    assert again.writer.partition is not None
    assert again.writer.partition.take_unsaved() == {}
    for query in QUERIES:
        want = [h.entry.id for h in approximate.search(query, 5).hits]
        assert [h.entry.id for h in again.search(query, 5).hits] == want


def test_one_catalog_ranks_alike_on_both_paths(tmp_path: Path, embedder: CountingEmbedder) -> None:
    # With one catalog its score carries no information: rounding must not turn it into noise.
    registries = []
    for name, threshold in (("exact", 10**9), ("ivf", 1)):
        store = SqliteStore(tmp_path / f"{name}.db")
        registry = Registry(
            store,
            embedder,
            settings=SearchSettings(result_cache_size=0, approximate_from=threshold),
        )
        registry.load()
        registry.register((CATALOGS / "support.yaml").read_text(), name="support")
        registries.append(registry)
    exact, approximate = registries
    assert approximate.index.vectors.approximate
    for query in QUERIES:
        for limit in (0, 5):
            want = [h.entry.id for h in exact.search(query, limit).hits]
            assert [h.entry.id for h in approximate.search(query, limit).hits] == want, query


@pytest.mark.parametrize("limit", [0, 5])
def test_a_tool_named_literally_comes_first_on_both_paths(
    both: tuple[Registry, Registry], limit: int
) -> None:
    # The words ask for something else; the identifier says which tool is meant.
    query = "reset a user's two-factor authentication with support/escalate_ticket"
    for registry in both:
        hits = registry.search(query, limit).hits
        assert hits[0].entry.id == "support/escalate_ticket"
        without = registry.search(query, limit, retriever="hybrid-no-literal").hits
        assert without[0].entry.id != "support/escalate_ticket"


def test_a_named_tool_the_caller_may_not_see_stays_invisible(
    both: tuple[Registry, Registry],
) -> None:
    viewer = Grants.parse(["support:read"])
    for registry in both:
        hits = registry.search("bill a customer with create_customer_invoice", 5, viewer=viewer)
        assert all(h.entry.tool.catalog == "support" for h in hits.hits)
        # The caller who may write invoices gets it first.
        writer = Grants.parse(["finance:write", "finance:read"])
        first = registry.search("bill them with create_customer_invoice", 5, viewer=writer)
        assert first.hits[0].entry.id == "finance/create_customer_invoice"


def test_a_catalog_named_literally_puts_its_best_tool_first(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    for name, threshold in (("exact", 10**9), ("ivf", 1)):
        store = SqliteStore(tmp_path / f"{name}.db")
        registry = Registry(
            store,
            embedder,
            settings=SearchSettings(result_cache_size=0, approximate_from=threshold),
        )
        registry.load()
        registry.register((CATALOGS / "support.yaml").read_text(), name="support")
        ledger = (CATALOGS / "finance.yaml").read_text().replace("name: finance", "name: ledger-2")
        registry.register(ledger, name="ledger-2")
        query = "open a support ticket for a customer about an invoice"
        assert registry.search(query, 5).hits[0].entry.tool.catalog == "support"
        named = registry.search(query + " in ledger-2", 5).hits
        assert named[0].entry.tool.catalog == "ledger-2", name
        assert named[1].entry.tool.catalog == "support"
        store.close()
