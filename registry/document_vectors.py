"""The vector of every live tool document, by document hash: read from the snapshot's vector
arena, from the store, and embedded only when neither has it."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
from numpy.typing import NDArray

from indexer.embedding import Embedder
from indexer.retrieval.segment import SegmentSpace
from registry.store import Store


class DocumentVectors(Mapping[str, NDArray[np.float32]]):
    """Document hash -> vector for the writer's documents (what each snapshot is built from).

    A vector lives in memory once: in the segment space's arena once a segment holds it
    (`space`), and here only from when it is read or embedded until the next snapshot is
    built (`settle`). A full copy beside the arena cost 1.6 KB a tool."""

    def __init__(
        self, store: Store, embedder: Embedder, space: SegmentSpace, *, progress: bool = False
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._space = space
        self._progress = progress
        self._pending: dict[str, NDArray[np.float32]] = {}
        # Tool documents this process has sent to the model (a metric).
        self.embedded_total = 0

    def __getitem__(self, doc_hash: str) -> NDArray[np.float32]:
        found = self._pending.get(doc_hash)
        if found is None:
            found = self._space.vector(doc_hash)
            if found is None:
                raise KeyError(doc_hash)
        return found

    def __contains__(self, doc_hash: object) -> bool:
        return isinstance(doc_hash, str) and (
            doc_hash in self._pending or self._space.holds(doc_hash)
        )

    def __iter__(self) -> Iterator[str]:
        yield from self._pending
        yield from (key for key in self._space.held_keys() if key not in self._pending)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def embed_missing(self, texts: Mapping[str, str]) -> dict[str, NDArray[np.float32]]:
        """Vectors for the document hashes held nowhere, from the model. Those the store has
        are taken in here; the new ones are returned, to be stored before `add` takes them
        (the writer stores them with the catalog, in one transaction)."""
        missing = [h for h in texts if h not in self]
        stored = self._store.embeddings(self._embedder.model_id, missing)
        self._pending.update(stored)
        to_embed = [h for h in missing if h not in stored]
        if not to_embed:
            return {}
        vectors = self._embedder.encode([texts[h] for h in to_embed], progress=self._progress)
        self.embedded_total += len(to_embed)
        return dict(zip(to_embed, vectors, strict=True))

    def add(self, vectors: Mapping[str, NDArray[np.float32]]) -> None:
        self._pending.update(vectors)

    def settle(self) -> None:
        """After a snapshot is built: every live document's vector is in the arena, so what
        is held here is either there too or no longer live (the store still has it)."""
        self._pending = {}

    def restore(self, texts: Mapping[str, str]) -> int:
        """Holds the vectors of exactly `texts` (hash -> text): from the store, and what it
        lacks embedded and stored now. Returns how many were embedded."""
        self._pending = {}
        new_vectors = self.embed_missing(texts)
        if new_vectors:
            self._store.put_embeddings(self._embedder.model_id, new_vectors)
            self.add(new_vectors)
        return len(new_vectors)
