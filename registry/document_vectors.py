"""The vector of every live tool document, by document hash: kept in memory, read from the
store, and embedded only when neither has it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
from numpy.typing import NDArray

from indexer.embedding import Embedder
from registry.store import Store


class DocumentVectors(Mapping[str, NDArray[np.float32]]):
    """Document hash -> vector for the writer's documents (what each snapshot is built from)."""

    def __init__(self, store: Store, embedder: Embedder, *, progress: bool = False) -> None:
        self._store = store
        self._embedder = embedder
        self._progress = progress
        self._by_hash: dict[str, NDArray[np.float32]] = {}
        # Tool documents this process has sent to the model (a metric).
        self.embedded_total = 0

    def __getitem__(self, doc_hash: str) -> NDArray[np.float32]:
        return self._by_hash[doc_hash]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_hash)

    def __len__(self) -> int:
        return len(self._by_hash)

    def embed_missing(self, texts: Mapping[str, str]) -> dict[str, NDArray[np.float32]]:
        """Vectors for the document hashes held nowhere, from the model. Those the store has
        are taken in here; the new ones are returned, to be stored before `add` takes them
        (the writer stores them with the catalog, in one transaction)."""
        missing = [h for h in texts if h not in self._by_hash]
        stored = self._store.embeddings(self._embedder.model_id, missing)
        self._by_hash.update(stored)
        to_embed = [h for h in missing if h not in stored]
        if not to_embed:
            return {}
        vectors = self._embedder.encode([texts[h] for h in to_embed], progress=self._progress)
        self.embedded_total += len(to_embed)
        return dict(zip(to_embed, vectors, strict=True))

    def add(self, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        self._by_hash.update(vectors)

    def restore(self, texts: Mapping[str, str]) -> int:
        """Holds the vectors of exactly `texts` (hash -> text): from the store, and what it
        lacks embedded and stored now. Returns how many were embedded."""
        self._by_hash = {}
        new_vectors = self.embed_missing(texts)
        if new_vectors:
            self._store.put_embeddings(self._embedder.model_id, new_vectors)
            self.add(new_vectors)
        return len(new_vectors)
