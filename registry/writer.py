"""The write side: catalog changes, their embeddings, and publishing the next snapshot.

Writes are serialised by one lock. Each change is one store transaction; then the next
`Snapshot` is made (`registry.indexing`: spliced from the last one) and published, while
reads go on answering from the previous one. On a shared store the writer also takes in what
other replicas stored (`catch_up`), and decides each change against the stored version.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import MappingProxyType

from indexer.embedding import Embedder
from indexer.formats import CatalogError, parse_catalog
from indexer.formats.lint import POISONING, discovery_warnings
from indexer.model import Catalog
from indexer.retrieval.lexical import Tokenised
from indexer.retrieval.tool_facts import ToolFacts
from indexer.retrieval.vector_index import Partition
from registry.catalog_diff import CatalogDiff, diff_catalog
from registry.catalog_image import CatalogImage
from registry.document_vectors import DocumentVectors
from registry.errors import CatalogNotFound, InvalidRequest, NotReady
from registry.heap import collector_paused, lasting_build, release_free_memory
from registry.indexing import DocumentTexts, LiveCatalog, SnapshotBuilder
from registry.live_catalogs import LiveCatalogs
from registry.snapshot import Snapshot
from registry.store import SharedStore, StaleCatalog, Store, StoredCatalog
from registry.store.base import left_in_store
from registry.store.tool_texts import keep, read_ahead
from registry.wire import MAX_CATALOG_NAME_CHARS, MAX_FORMAT_CHARS

logger = logging.getLogger(__name__)
MAX_SCOPE_CHARS = 64
# Catalog changes decided again after another replica wrote the same catalog first.
MAX_STALE_RETRIES = 20


@dataclass(frozen=True, kw_only=True)
class RegisterOutcome:
    catalog: str
    added: int
    updated: int
    removed: int
    unchanged: int
    version: str
    revision: int
    generation: int
    embedded: int
    # `capreg lint`'s warnings for the catalog as registered (empty when nothing was parsed).
    warnings: tuple[str, ...] = ()
    # The scope given to a catalog that declared none ("" when it declared its own).
    assigned_scope: str = ""


class Writer:
    """Owns the live catalogs and their vectors; publishes a snapshot after every change."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        publish: Callable[[Snapshot], None],
        *,
        approximate_from: int,
        progress: bool = False,
        default_scope: str = "",
        refuse_poisoning: bool = False,
    ) -> None:
        self._store = store
        # Decided once: a runtime protocol check costs tens of microseconds, on every change.
        self._shared = isinstance(store, SharedStore)
        self._default_scope = default_scope
        self._refuse_poisoning = refuse_poisoning
        self._embedder = embedder
        self._publish = publish
        self._builder = SnapshotBuilder(
            store,
            model=embedder.model_id,
            dimension=embedder.dimension,
            approximate_from=approximate_from,
        )
        self._lock = threading.Lock()
        self._live = LiveCatalogs()
        self._vectors = DocumentVectors(store, embedder, self._builder.space, progress=progress)
        # None until `load` has published the first snapshot.
        self._generation: int | None = None
        # Inside `bulk()`: the latest generation waiting for one rebuild; otherwise None.
        self._deferred: int | None = None
        # On a shared store: every change up to this generation is applied here.
        self._applied = 0

    # -- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Restores every stored catalog and publishes the first snapshot; embeds only what
        the store lacks (nothing, unless the model or the document text changed)."""
        started = time.perf_counter()
        with self._lock, lasting_build():
            catalogs, loaded = self._stored()
            entries = [LiveCatalog.of(stored) for stored in catalogs]
            # Their images' bytes are decoded: nothing holds them past this point.
            del catalogs
            embedded = self._vectors.restore(DocumentTexts(entries))
            self._store_images(entries)
            self._live = live = LiveCatalogs(entries, loaded)
            self._applied = loaded
            tools = self._rebuild(loaded)
        release_free_memory()
        logger.info(
            "loaded %d catalogs, %d tools in %.2fs (%d embedded)",
            len(live),
            tools,
            time.perf_counter() - started,
            embedded,
        )

    def _stored(self) -> tuple[list[StoredCatalog], int]:
        """Every stored catalog and the generation they are at."""
        if isinstance(self._store, SharedStore):
            # The catalogs and the generation from one snapshot of the database.
            changes = self._store.changes_since(-1)
            return changes.changed, changes.generation
        return self._store.catalogs(), self._store.generation()

    def _store_images(self, entries: list[LiveCatalog]) -> None:
        """Stores the images derived while loading (a store written before images, or by a
        capreg that derives texts or tokens another way), so the next start reads them."""
        derived = [entry for entry in entries if entry.derived]
        if not derived:
            return
        stored = self._store.put_images(
            [
                (e.stored.catalog.name, e.stored.revision, e.stored.incarnation, e.image())
                for e in derived
            ]
        )
        for entry in derived:
            entry.derived = False
        logger.info("stored the images of %d catalogs", stored)

    @property
    def embedded_total(self) -> int:
        """Tool documents this process has sent to the model (a metric)."""
        return self._vectors.embedded_total

    @property
    def partition(self) -> Partition | None:
        """The IVF partition the snapshots use (None below the approximate-search size)."""
        return self._builder.partition

    @property
    def generation(self) -> int:
        """The generation of the last change (NotReady while loading)."""
        return self._current_generation()

    def catch_up(self) -> int:
        """Applies what other replicas stored since this one last looked (a shared store
        only): their catalogs join a new snapshot with the vectors they stored, nothing is
        embedded. Returns how many catalogs changed here."""
        if not isinstance(self._store, SharedStore):
            return 0
        self._current_generation()  # NotReady while loading
        with self._lock:
            return self._catch_up_locked()

    def _catch_up_locked(self) -> int:
        assert isinstance(self._store, SharedStore)
        if self._store.generation() <= self._applied:
            return 0
        changes = self._store.changes_since(self._applied)
        applied = 0
        for stored in changes.changed:
            current = self._live.get(stored.catalog.name)
            if (
                current is not None
                and current.stored.revision == stored.revision
                and current.stored.incarnation == stored.incarnation
            ):
                # Compared tool by tool: their schemas read in a query a side.
                read_ahead((*current.stored.catalog.tools, *stored.catalog.tools))
                if current.stored.catalog == stored.catalog:
                    continue  # this replica's own write, or one it has already applied
            entry = LiveCatalog.of(stored)
            missing = self._vectors.embed_missing(DocumentTexts([entry]))
            if missing:  # the writer stores its vectors in the same transaction
                logger.warning("%d vectors missing from the store, embedded here", len(missing))
                self._vectors.add(missing)
            self._live.take(current, entry, changes.generation)
            applied += 1
        for name in changes.deleted:
            current = self._live.get(name)
            if current is not None:
                self._live.drop(current, changes.generation)
                applied += 1
        self._applied = changes.generation
        if applied:
            self._rebuild(max(changes.generation, self._generation or 0))
            logger.info("caught up to generation %d: %d catalogs", changes.generation, applied)
        return applied

    def _replace_current(self, catalog: Catalog, digest: str) -> RegisterOutcome:
        """`_replace`, decided against the store's current version of the catalog: when
        another replica wrote it in between, catch up and decide again (a bounded number of
        times; past that StaleCatalog reaches the caller as ABORTED, to retry)."""
        for attempt in range(MAX_STALE_RETRIES + 1):
            self._follow()
            try:
                return self._replace(catalog, digest)
            except StaleCatalog:
                if attempt == MAX_STALE_RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _follow(self) -> None:
        """Before a change on a shared store: take in what other replicas stored, so the
        change is decided against the current version (under the writer lock)."""
        if self._shared:
            self._catch_up_locked()

    def _advance(self, generation: int) -> None:
        """Counts this replica's own change as applied when nothing was missed before it."""
        if generation == self._applied + 1:
            self._applied = generation

    def _current_generation(self) -> int:
        generation = self._generation
        if generation is None:
            raise NotReady("the index is loading; retry shortly")
        return generation

    # -- changes ---------------------------------------------------------------------------

    def register(self, content: str, *, name: str = "", fmt: str = "") -> RegisterOutcome:
        """Validates, embeds what changed, and replaces the catalog in one transaction."""
        digest = self._source_digest(content, name, fmt)
        unchanged = self._unchanged_source(digest)
        if unchanged is not None:
            return unchanged
        catalog, assigned = self._scoped(parse_catalog(content, name=name, fmt=fmt))
        warnings = tuple(discovery_warnings(catalog))
        poisoning = [w for w in warnings if w.endswith(POISONING)]
        if self._refuse_poisoning and poisoning:
            raise CatalogError(catalog.name, poisoning, catalog)
        with self._lock:
            written = self._replace_current(catalog, digest)
            outcome = replace(written, warnings=warnings, assigned_scope=assigned)
            self._live.remember_source(catalog.name, digest)
            return outcome

    def unchanged(self, content: str, *, name: str = "", fmt: str = "") -> RegisterOutcome | None:
        """`register`'s answer when these bytes, name and format are a live source, or None."""
        return self._unchanged_source(self._source_digest(content, name, fmt))

    def _source_digest(self, content: str, name: str, fmt: str) -> str:
        self._current_generation()  # NotReady before any work while still loading
        _check_name(name)
        if len(fmt) > MAX_FORMAT_CHARS:
            raise InvalidRequest(f"format: at most {MAX_FORMAT_CHARS} characters (got {len(fmt)})")
        # The policy is part of what a source means: after a restart with another default
        # scope, the same bytes register differently.
        policy = f"{self._default_scope}\0{self._refuse_poisoning}"
        return hashlib.sha256(f"{name}\0{fmt}\0{policy}\0{content}".encode()).hexdigest()

    def _scoped(self, catalog: Catalog) -> tuple[Catalog, str]:
        """`catalog`, given the default scope when neither it nor any tool declares one, so
        a catalog nobody scoped is not public to every key."""
        if (
            not self._default_scope
            or catalog.default_scopes
            or any(t.scopes for t in catalog.tools)
        ):
            return catalog, ""
        # A scope is at most 64 characters: a long catalog name is shortened inside it (the
        # response's assigned_scope says which scope to grant).
        room = MAX_SCOPE_CHARS - (len(self._default_scope) - len("{catalog}"))
        scope = self._default_scope.replace("{catalog}", catalog.name[: max(room, 1)])
        return replace(catalog, default_scopes=frozenset({scope})), scope

    def _unchanged_source(self, digest: str) -> RegisterOutcome | None:
        """A live catalog's source resubmitted: the same bytes parse to the same catalog."""
        with self._lock:
            self._follow()
            live = self._live.registered_from(digest)
            if live is None:
                return None
            return self._nothing_changed(live.stored, len(live.stored.tools))

    def _nothing_changed(self, stored: StoredCatalog, unchanged: int) -> RegisterOutcome:
        return RegisterOutcome(
            catalog=stored.catalog.name,
            added=0,
            updated=0,
            removed=0,
            unchanged=unchanged,
            version=stored.catalog.version,
            revision=stored.revision,
            generation=self._current_generation(),
            embedded=0,
        )

    def _replace(self, catalog: Catalog, digest: str) -> RegisterOutcome:
        """Diff, persist, publish, log: `catalog` replaces its live version (if any)."""
        current = self._live.get(catalog.name)
        diff = diff_catalog(current.stored if current is not None else None, catalog)
        problems = diff.collisions(self._live.function_owners)
        if problems:
            raise CatalogError(catalog.name, problems)
        if current is not None and diff.changes_nothing:
            self._keep_source(current, digest)
            return self._nothing_changed(current.stored, diff.unchanged)
        new_vectors = self._vectors.embed_missing(diff.missing_documents(self._vectors))
        image = CatalogImage(
            diff.doc_hashes,
            Tokenised.of(diff.documents),
            tuple(t.scopes for t in catalog.tools),
            tuple(ToolFacts.of(t) for t in catalog.tools),
        )
        if current is not None:
            # The snapshots until the next one still show its tools as stored now.
            keep(current.stored.catalog.tools)
        generation = self._store.replace_catalog(
            catalog,
            diff.revision,
            diff.tools,
            self._embedder.model_id,
            new_vectors,
            source_digest=digest,
            replaces=diff.replaces,
            incarnation=current.stored.incarnation if current is not None else 0,
            image=image.encode(),
        )
        self._advance(generation)
        self._vectors.add(new_vectors)
        stored = left_in_store(
            StoredCatalog(
                catalog=catalog,
                revision=diff.revision,
                tools=diff.tools,
                source_digest=digest,
                # The store checked it replaced that life of the name, or began a new one.
                incarnation=current.stored.incarnation if current is not None else generation,
            ),
            self._store,
        )
        entry = LiveCatalog.with_image(stored, image)
        self._live.take(current, entry, generation)
        self._rebuild(generation)
        _log_registered(diff, len(new_vectors), generation)
        return RegisterOutcome(
            catalog=catalog.name,
            added=diff.added,
            updated=diff.updated,
            removed=diff.removed,
            unchanged=diff.unchanged,
            version=catalog.version,
            revision=diff.revision,
            generation=generation,
            embedded=len(new_vectors),
        )

    def _keep_source(self, current: LiveCatalog, digest: str) -> None:
        """Records the source of an unchanged catalog, so a resubmission skips parsing."""
        if digest and current.stored.source_digest != digest:
            self._store.set_source_digest(current.stored.catalog.name, digest)
            current.stored = replace(current.stored, source_digest=digest)

    def delete(self, name: str) -> tuple[int, int]:
        """Removes a catalog; returns (tools removed, new generation)."""
        self._current_generation()  # NotReady while loading
        _check_name(name)
        with self._lock:
            self._follow()
            current = self._live.get(name)
            if current is None:
                close = difflib.get_close_matches(name, self._live.names(), n=3, cutoff=0.5)
                raise CatalogNotFound(name, close)
            keep(current.stored.catalog.tools)
            generation = self._store.delete_catalog(name)
            if generation is None:  # another replica deleted it first
                self._follow()
                raise CatalogNotFound(name)
            self._advance(generation)
            self._live.drop(current, generation)
            self._rebuild(generation)
            return len(current.stored.tools), generation

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Registers and deletes inside this block rebuild the snapshot once, at the end.

        Each change is still its own transaction; searches meanwhile see the snapshot from
        before the block. Loading hundreds of catalogs otherwise rebuilds hundreds of times.
        The cyclic collector is paused for the block (`registry.heap.collector_paused`): a
        batch is bounded (a RegisterCatalogs call, a folder, a watch round).
        """
        with self._lock:
            self._deferred = 0
        try:
            with collector_paused():
                yield
        finally:
            with self._lock, collector_paused():
                generation, self._deferred = self._deferred, None
                if generation:
                    self._rebuild(generation, force=True)
                    release_free_memory()

    # -- snapshots -------------------------------------------------------------

    def _rebuild(self, generation: int, *, force: bool = False) -> int:
        """Builds and publishes the snapshot of `generation`; returns its tool count.

        Only catalogs that changed since the last snapshot get a new segment; the snapshot
        is spliced from the last one when that is cheaper (see `indexer.retrieval.assembly`).
        Built whole before the swap, so no search pays for it: the old snapshot answers
        meanwhile."""
        if self._deferred is not None and not force:
            self._deferred = generation
            return 0
        live = self._live.catalogs()
        index = self._builder.build(live, self._vectors, generation)
        self._vectors.settle()
        views = MappingProxyType(dict(self._live.views))
        self._publish(Snapshot(index, views, MappingProxyType(dict(self._live.touched))))
        self._generation = generation
        return len(index)


def _log_registered(diff: CatalogDiff, embedded: int, generation: int) -> None:
    logger.info(
        "registered catalog %s r%d: +%d ~%d -%d =%d (%d embedded), generation %d",
        *(diff.catalog.name, diff.revision, diff.added, diff.updated, diff.removed),
        *(diff.unchanged, embedded, generation),
    )


def _check_name(name: str) -> None:
    if len(name) > MAX_CATALOG_NAME_CHARS:
        raise InvalidRequest(
            f"name: a catalog name is at most {MAX_CATALOG_NAME_CHARS} characters (got {len(name)})"
        )
