"""The domain core every transport calls: a writer and a snapshot reader over one store.

`Registry` only composes the two halves (they share nothing but the published snapshot) and
forwards to them, so a transport holds one object. Writes go to `writer`; reads take one
`snapshot` and answer from it alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

from indexer.embedding import Embedder
from indexer.errors import CapregError
from indexer.retrieval.learned import load_learned_stage
from indexer.retrieval.retrievers import Retriever
from indexer.retrieval.tool_index import IndexedTool, ToolIndex
from registry.auth.scopes import Grants
from registry.config import CatalogPolicy, SearchSettings
from registry.queries import QueryEncoder
from registry.reader import Reader, SearchOutcome
from registry.snapshot import ALL, CatalogSummary, Snapshot
from registry.store import Store
from registry.writer import RegisterOutcome, Writer

__all__ = ["ALL", "CatalogSummary", "RegisterOutcome", "Registry", "SearchOutcome", "Snapshot"]


class Registry:
    """Catalogs, their stored embeddings, and the current searchable snapshot."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        settings: SearchSettings | None = None,
        policy: CatalogPolicy | None = None,
        progress: bool = False,
    ) -> None:
        settings = settings or SearchSettings()
        policy = policy or CatalogPolicy()
        self.queries = QueryEncoder(embedder, cache_size=settings.query_cache_size)
        self.reader = Reader(
            self.queries,
            weak_score=settings.weak_score,
            learned=load_learned_stage(settings.learned_stage),
            result_cache_size=settings.result_cache_size,
            result_cache_ttl=settings.result_cache_ttl,
        )
        self.writer = Writer(
            store,
            embedder,
            self.reader.publish,
            approximate_from=settings.approximate_from,
            progress=progress,
            default_scope=policy.default_scope,
            refuse_poisoning=policy.refuse_poisoning,
        )

    # -- the write side ----------------------------------------------------------------

    def load(self) -> None:
        self.writer.load()

    def register(self, content: str, *, name: str = "", fmt: str = "") -> RegisterOutcome:
        return self.writer.register(content, name=name, fmt=fmt)

    def unchanged(self, content: str, *, name: str = "", fmt: str = "") -> RegisterOutcome | None:
        """What `register` answers for a live catalog's source resubmitted, or None."""
        return self.writer.unchanged(content, name=name, fmt=fmt)

    def register_many(
        self, entries: Sequence[tuple[str, str, str]]
    ) -> list[RegisterOutcome | CapregError]:
        """Registers each (content, name, format) on its own, rebuilding the snapshot once;
        one outcome per entry, in order: what `register` returned, or the error it raised."""
        outcomes: list[RegisterOutcome | CapregError] = []
        with self.bulk():
            for content, name, fmt in entries:
                try:
                    outcomes.append(self.register(content, name=name, fmt=fmt))
                except CapregError as exc:
                    outcomes.append(exc)
        return outcomes

    def delete(self, name: str) -> tuple[int, int]:
        return self.writer.delete(name)

    @contextmanager
    def bulk(self) -> Iterator[None]:
        with self.writer.bulk():
            yield

    # -- the read side -----------------------------------------------------------------

    @property
    def ready(self) -> bool:
        return self.reader.ready

    @property
    def snapshot(self) -> Snapshot:
        """The current snapshot (NotReady while loading): read it once per request."""
        return self.reader.snapshot

    @property
    def index(self) -> ToolIndex:
        return self.reader.snapshot.index

    @property
    def embedder(self) -> Embedder:
        return self.queries.embedder

    def search(
        self,
        query: str,
        limit: int = 0,
        catalogs: Iterable[str] = (),
        viewer: Grants = ALL,
        retriever: str = Retriever.DEFAULT,
    ) -> SearchOutcome:
        return self.reader.search(query, limit, catalogs, viewer, retriever)

    def schemas(self, ids: Sequence[str], viewer: Grants = ALL) -> list[IndexedTool]:
        return self.reader.snapshot.schemas(ids, viewer)

    def catalogs(self, viewer: Grants = ALL) -> list[CatalogSummary]:
        return self.reader.snapshot.catalog_summaries(viewer)
