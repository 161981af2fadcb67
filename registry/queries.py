"""Query vectors: requests and their clauses encoded once per audience.

A query vector holds no tool data, but whether it is cached says that someone asked the same
thing: a cache shared by everyone would let one key time another's queries (a hit answers in
a third of the time). Entries are therefore kept per audience, the caller's visibility class,
the same partition the result cache uses (decision 0067). Offline work (evaluation warm-up,
training) uses the audience of a caller who sees everything, as its searches do.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from indexer.embedding import Embedder, SpanEmbedder
from indexer.retrieval.fusion import clause_spans, split_intents
from registry.auth.scopes import Grants
from registry.cache import TTLCache, normalise_query

QUERY_VECTOR_TTL_SECONDS = 24 * 3600.0
# The audience of a caller who sees everything (registry.snapshot.ALL).
EVERYONE = Grants.parse(["*"]).visibility_class


class QueryEncoder:
    """Encodes requests with the registry's embedder, remembering recent vectors."""

    def __init__(self, embedder: Embedder, *, cache_size: int) -> None:
        self._embedder = embedder
        self._vectors: TTLCache[str, NDArray[np.float32]] = TTLCache(
            max_entries=cache_size, ttl_seconds=QUERY_VECTOR_TTL_SECONDS
        )
        self._audience = EVERYONE

    def seen_by(self, audience: str) -> QueryEncoder:
        """This encoder as `audience` uses it: one cache (one bound) for all, but no entry
        one audience stored is ever found by another."""
        if audience == self._audience:
            return self
        view = copy.copy(self)
        view._audience = audience
        return view

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def warm(self, queries: Sequence[str], *, progress: bool = False) -> None:
        """Encodes many queries (and their clauses) ahead of time: evaluations run thousands."""
        if not isinstance(self._embedder, SpanEmbedder):
            texts = [t for q in queries for t in (q.strip(), *split_intents(q.strip()))]
            self.embed_many(texts, progress=progress)
            return
        single = [q.strip() for q in queries if not split_intents(q.strip())]
        self.embed_many(single, progress=progress)
        for query in queries:
            text = query.strip()
            clauses = split_intents(text)
            if clauses:
                self.request_vectors(text, clauses)

    def request_vectors(
        self, text: str, clauses: Sequence[str], *, joint: bool = True
    ) -> list[NDArray[np.float32]]:
        """Vectors for a request and its clauses.

        With `joint` (and an embedder that can), one model pass over the request gives all
        of them: each clause pools its own tokens' contextual states. Otherwise each text is
        encoded on its own.
        """
        embedder = self._embedder
        if not clauses or not joint or not isinstance(embedder, SpanEmbedder):
            return self.embed_many([text, *clauses])
        key = self._key(text)
        keys = [key, *(f"{key}\0{clause}" for clause in clauses)]
        found = [self._vectors.get(k) for k in keys]
        if any(v is None for v in found):
            pooled = embedder.encode_spans(text, clause_spans(text, list(clauses)))
            # A clause past the model's window was not seen in that pass: encode it alone.
            alone = [clauses[i] for i, v in enumerate(pooled[1:]) if v is None]
            extra = iter(self.embed_many(alone)) if alone else iter(())
            vectors = [v if v is not None else next(extra) for v in pooled]
            for k, vector in zip(keys, vectors, strict=True):
                self._vectors.put(k, vector)
            return vectors
        return [v for v in found if v is not None]

    def embed(self, query: str) -> NDArray[np.float32]:
        return self.embed_many([query])[0]

    def embed_many(
        self, queries: Sequence[str], *, progress: bool = False
    ) -> list[NDArray[np.float32]]:
        """Vectors for `queries`, encoding only those not cached, in one batch."""
        texts = {self._key(q): normalise_query(q) for q in queries}
        keys = [self._key(q) for q in queries]
        found = {key: self._vectors.get(key) for key in keys}
        missing = list(dict.fromkeys(k for k, v in found.items() if v is None))
        if missing:
            vectors = self._embedder.encode([texts[k] for k in missing], progress=progress)
            for key, vector in zip(missing, vectors, strict=True):
                found[key] = vector
                self._vectors.put(key, vector)
        return [v for v in (found[k] for k in keys) if v is not None]

    def _key(self, text: str) -> str:
        return f"{self._audience}\0{normalise_query(text)}"
