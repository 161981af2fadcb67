"""The read side answers from one snapshot: a write that lands mid-request changes nothing it
reports, and listings never see a catalog half-removed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from registry.core import Registry
from registry.errors import ToolsNotFound
from registry.store import SqliteStore
from tests.conftest import CATALOGS, CountingEmbedder, copy_db


class WriteWhileEncoding(CountingEmbedder):
    """Runs a write the first time a query is encoded, i.e. in the middle of a search.

    Reason for the wrapper: it is the only way to place a write exactly between a search's
    start and its ranking without sleeping.
    """

    def __init__(self, inner: CountingEmbedder) -> None:
        super().__init__(inner.inner)
        self.during: Callable[[], object] | None = None

    def encode_spans(
        self, text: str, spans: Sequence[tuple[int, int]]
    ) -> list[NDArray[np.float32] | None]:
        self._write()
        return super().encode_spans(text, spans)

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]:
        self._write()
        return super().encode(texts, progress=progress)

    def _write(self) -> None:
        during, self.during = self.during, None
        if during is not None:
            during()


@pytest.fixture
def racing(
    sample_db: Path, tmp_path: Path, embedder: CountingEmbedder
) -> Iterator[tuple[Registry, WriteWhileEncoding]]:
    store = SqliteStore(copy_db(sample_db, tmp_path))
    racing_embedder = WriteWhileEncoding(embedder)
    registry = Registry(store, racing_embedder)
    registry.load()
    yield registry, racing_embedder
    store.close()


def test_a_search_answers_from_the_snapshot_it_started_with(
    racing: tuple[Registry, WriteWhileEncoding],
) -> None:
    registry, embedder = racing
    before = registry.snapshot.generation
    embedder.during = lambda: registry.delete("support")
    outcome = registry.search("open a support ticket for a customer")
    # The delete landed during the search; the answer is the old snapshot's, whole.
    assert registry.snapshot.generation > before
    assert outcome.generation == before
    assert outcome.hits[0].entry.id == "support/create_ticket"
    after = registry.search("open a support ticket for a customer")
    assert after.generation == registry.snapshot.generation
    assert all(not hit.entry.id.startswith("support/") for hit in after.hits)


def test_schemas_and_their_generation_come_from_one_snapshot(
    racing: tuple[Registry, WriteWhileEncoding],
) -> None:
    registry, _ = racing
    snapshot = registry.snapshot
    registry.delete("support")
    # The snapshot taken before the delete still answers for the deleted catalog's tools.
    assert [e.id for e in snapshot.schemas(["support/create_ticket"])] == ["support/create_ticket"]
    with pytest.raises(ToolsNotFound):
        registry.snapshot.schemas(["support/create_ticket"])


def test_listings_never_fail_while_catalogs_come_and_go(sample_registry: Registry) -> None:
    content = (CATALOGS / "support.yaml").read_text()
    failures: list[BaseException] = []
    done = threading.Event()

    def churn() -> None:
        try:
            for _ in range(10):
                sample_registry.delete("support")
                sample_registry.register(content, name="support")
        except BaseException as exc:  # reported below, not swallowed
            failures.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=churn)
    writer.start()
    listings = 0
    while not done.is_set() or listings == 0:
        summaries = sample_registry.catalogs()
        assert {"hr", "finance"} <= {c.name for c in summaries}
        listings += 1
    writer.join(timeout=120)
    assert not writer.is_alive()
    assert failures == []


def test_the_default_cut_and_an_explicit_limit_are_cached_apart(sample_registry: Registry) -> None:
    query = "open a support ticket for a customer"
    confident = sample_registry.search(query)
    top_five = sample_registry.search(query, 5)
    assert not top_five.cached
    assert len(top_five.hits) == 5
    assert len(confident.hits) < 5
    again = sample_registry.search(query)
    assert again.cached
    assert [h.entry.id for h in again.hits] == [h.entry.id for h in confident.hits]
