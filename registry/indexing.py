"""How the writer's live catalogs become the next snapshot: each catalog's segment (made
once per revision), the IVF partition for the corpus' size (the current one, the stored one,
or one trained and stored now), and the splice from the last snapshot."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from indexer.derived_links import CatalogLinks
from indexer.made_on_read import MadeOnRead
from indexer.retrieval.document import document_text
from indexer.retrieval.lexical import Tokenised
from indexer.retrieval.segment import Segment, SegmentSource, SegmentSpace
from indexer.retrieval.tool_facts import ToolFacts
from indexer.retrieval.tool_index import IndexedTool, ToolIndex
from indexer.retrieval.vector_index import Partition
from registry.catalog_image import CatalogImage, decode
from registry.snapshot import CatalogView
from registry.store import Store, StoredCatalog
from registry.store.tool_texts import read_ahead

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class LiveCatalog:
    """A stored catalog with what its image gives each tool, in the same order: its document
    hash, tokenised document and required scopes (`registry.catalog_image`)."""

    stored: StoredCatalog
    doc_hashes: tuple[str, ...]
    # Until the catalog's segment is made from them; then dropped (nothing reads them again:
    # a changed catalog is a new LiveCatalog).
    tokens: Tokenised | None
    # The tools' own scopes, as the image gives them (read without parsing a schema).
    own_scopes: tuple[frozenset[str], ...]
    # What a search reads of each tool besides its name (read without parsing a schema; a
    # stored image's are split when a search first reads them: `StoredFacts`).
    facts: Sequence[ToolFacts]
    view: CatalogView = field(init=False)
    # The catalog's share of a snapshot, made on the first snapshot that holds it.
    segment: Segment | None = None
    # The stored image did not fit (none stored, or derived another way): it was derived
    # from the tools, and the writer stores it (`image`).
    derived: bool = False

    @classmethod
    def of(cls, stored: StoredCatalog) -> LiveCatalog:
        """From the stored image when it fits, else derived from the tools."""
        image = decode(stored.image, len(stored.tools))
        derived = image is None
        if image is None:
            read_ahead(stored.catalog.tools)
            image = CatalogImage.of_tools(stored.catalog.tools, stored.catalog.title)
        return cls.with_image(
            # The image's bytes are read once: the decoded form is what is kept.
            replace(stored, image=b"") if stored.image else stored,
            image,
            derived=derived,
        )

    @classmethod
    def with_image(
        cls, stored: StoredCatalog, image: CatalogImage, *, derived: bool = False
    ) -> LiveCatalog:
        return cls(
            stored=stored,
            doc_hashes=image.doc_hashes,
            tokens=image.tokens,
            own_scopes=image.scopes,
            facts=image.facts,
            derived=derived,
        )

    def image(self) -> bytes:
        """The stored form of this catalog's image (while its tokens are held)."""
        if self.tokens is None:
            raise ValueError(f"{self.stored.catalog.name}: its tokens were already dropped")
        return CatalogImage(self.doc_hashes, self.tokens, self.own_scopes, self.facts).encode()

    def document(self, row: int) -> str:
        """The text the `row`-th tool is embedded by (derived again: only a vector missing
        from the store needs it)."""
        return document_text(self.stored.tools[row].tool, self.stored.catalog.title)

    @cached_property
    def required_scopes(self) -> tuple[frozenset[str], ...]:
        """Each tool's required scopes: the catalog's, and its own (`Catalog.required_scopes`,
        from the image's scopes: no schema is parsed)."""
        default = self.stored.catalog.default_scopes
        own_scopes = self.own_scopes
        if not any(own_scopes):  # most catalogs: the catalog's scopes guard every tool
            return (default,) * len(own_scopes)
        return tuple(default | own if own else default for own in own_scopes)

    def __post_init__(self) -> None:
        catalog = self.stored.catalog
        self.view = CatalogView(
            name=catalog.name,
            title=catalog.title,
            description=catalog.description,
            version=catalog.version,
            revision=self.stored.revision,
            scope_counts=MappingProxyType(Counter(self.required_scopes)),
            workflows=catalog.workflows,
            source=catalog,
        )

    def entry_source(self) -> Callable[[], CatalogEntries]:
        """What makes the catalog's tools as the index serves them, each with its links
        (derived from the catalog alone when first read, so a restart derives the same):
        a segment calls it when its entries are first read (`Segment.entries`)."""
        return partial(CatalogEntries, self.stored, self.required_scopes, self.facts)


class CatalogEntries(MadeOnRead[IndexedTool]):
    """A stored catalog's tools as the index serves them, in the catalog's order, each made
    when first read. A search reads the few tools it ranks, and their catalogs may hold
    thousands: made whole, a catalog's first read cost a search milliseconds a thousand
    tools (decision 0092)."""

    def __init__(
        self,
        stored: StoredCatalog,
        scopes: Sequence[frozenset[str]],
        facts: Sequence[ToolFacts],
    ) -> None:
        if not len(stored.tools) == len(scopes) == len(facts):
            raise ValueError(f"{stored.catalog.name}: one scope set and facts a tool")
        super().__init__(len(scopes))
        self._stored = stored
        self._scopes = scopes
        self._facts = facts
        self._links: CatalogLinks | None = None

    def _make(self, row: int) -> IndexedTool:
        tool, catalog = self._stored.tools[row], self._stored.catalog
        links = self._links
        if links is None:
            links = self._links = CatalogLinks(catalog.tools, before=read_ahead)
        return IndexedTool(
            tool=tool.tool,
            required_scopes=self._scopes[row],
            spelling=tool.spelling,
            catalog_title=catalog.title,
            catalog_version=catalog.version,
            # The revision that last changed this tool.
            catalog_revision=tool.revision,
            link_source=links.of,
            known_facts=self._facts[row],
        )


class DocumentTexts(Mapping[str, str]):
    """Document hash -> text over some live catalogs, each text derived only when read (a
    restart needs the texts of vectors missing from the store alone, usually none)."""

    def __init__(self, catalogs: Sequence[LiveCatalog]) -> None:
        self._where = {
            doc_hash: (catalog, row)
            for catalog in catalogs
            for row, doc_hash in enumerate(catalog.doc_hashes)
        }

    def __getitem__(self, doc_hash: str) -> str:
        catalog, row = self._where[doc_hash]
        return catalog.document(row)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


class SnapshotBuilder:
    """Makes each snapshot from the live catalogs, spliced from the one before."""

    def __init__(self, store: Store, *, model: str, dimension: int, approximate_from: int) -> None:
        self._store = store
        self._model = model
        self._dimension = dimension
        self._approximate_from = approximate_from
        self._partition: Partition | None = None
        self._space = SegmentSpace(dimension)
        # The last snapshot built: the next one is spliced from it.
        self._index: ToolIndex | None = None

    @property
    def space(self) -> SegmentSpace:
        """Where the segments' vectors live (also the writer's in-memory copy of them)."""
        return self._space

    @property
    def partition(self) -> Partition | None:
        """The IVF partition in use (None below the approximate-search size)."""
        return self._partition

    def build(
        self,
        live: Sequence[LiveCatalog],
        vectors: Mapping[str, NDArray[np.float32]],
        generation: int,
    ) -> ToolIndex:
        """The snapshot of `live` at `generation` (every vector in `vectors`). Only catalogs
        without a segment get one; the snapshot is spliced from the last one when that is
        cheaper (see `indexer.retrieval.assembly`)."""
        segments = self._segments(live, vectors)
        size = sum(map(len, segments))  # no Python step per catalog (121,557 at 1M tools)
        partition = self._partition_for(segments, size) if size >= self._approximate_from else None
        previous = self._index
        if self._space.needs_renumbering(size):
            segments = self._space.renumbered(segments)
            for catalog, segment in zip(live, segments, strict=True):
                catalog.segment = segment
            previous = None
        self._index = ToolIndex(
            segments, generation, space=self._space, partition=partition, previous=previous
        )
        if partition is not None:
            self._store_lists(partition)
        return self._index

    def _store_lists(self, partition: Partition) -> None:
        """Stores the IVF lists this build computed, so no restart computes them again."""
        unsaved = partition.take_unsaved()
        if unsaved:
            self._store.put_ivf_lists(self._model, partition.digest, unsaved)

    def _segments(
        self, catalogs: Sequence[LiveCatalog], vectors: Mapping[str, NDArray[np.float32]]
    ) -> list[Segment]:
        """Each catalog's segment, making those not made yet together."""
        # In the snapshot's row order (`Segment.sort_key`), so that a full build's vectors lie
        # in consecutive slots and its index reads them in place (`VectorIndex.rows`).
        new = sorted(
            (catalog for catalog in catalogs if catalog.segment is None),
            key=lambda catalog: catalog.stored.catalog.name + "/",
        )
        if new:
            sources = []
            for catalog in new:
                if catalog.tokens is None:
                    raise ValueError(f"{catalog.stored.catalog.name}: no tokens to index")
                # Each vector is written once, into the arena (a start-up makes thousands of
                # segments, and a matrix of them all first cost one more copy of every vector).
                sources.append(
                    SegmentSource(
                        catalog.stored.catalog.name,
                        catalog.entry_source(),
                        [vectors[doc_hash] for doc_hash in catalog.doc_hashes],
                        catalog.doc_hashes,
                        catalog.tokens,
                        tools=catalog.stored.tools,
                        scopes=catalog.required_scopes,
                    )
                )
            for catalog, segment in zip(new, self._space.segments(sources), strict=True):
                catalog.segment = segment
                catalog.tokens = None
        return [catalog.segment for catalog in catalogs if catalog.segment is not None]

    def _partition_for(self, segments: Sequence[Segment], size: int) -> Partition:
        """The IVF partition for a corpus this size: the current one, the stored one, or a new
        one trained now and stored (so a restart does not train again)."""
        dimension = self._dimension
        if self._partition is not None and self._partition.fits(size):
            return self._partition
        model = self._model
        stored = self._store.partition(model)
        if stored is not None and stored[0].shape[1] == dimension:
            candidate = Partition(*stored)
            if candidate.fits(size):
                started = time.perf_counter()
                stored_lists = self._store.ivf_lists(model, candidate.digest)
                # Only the documents held: the store keeps the lists of documents since gone.
                held = self._space.holds
                read = candidate.remember({k: at for k, at in stored_lists.items() if held(k)})
                logger.info(
                    "read %d stored IVF lists in %.2fs", read, time.perf_counter() - started
                )
                self._partition = candidate
                return candidate
        started = time.perf_counter()
        slots = np.concatenate([s.slots for s in segments])
        self._partition = Partition.train(self._space.vectors[slots])
        self._store.put_partition(model, self._partition.centroids, size)
        logger.info(
            "trained an IVF partition of %d lists on %d tools in %.2fs",
            len(self._partition.centroids),
            size,
            time.perf_counter() - started,
        )
        return self._partition
