"""The registry's domain core: registers catalogs, keeps the index current, answers queries.

Transport code (the gRPC servicer, the CLI, the evaluation) calls this and nothing below it.
Writes are serialised; reads use whichever immutable index snapshot is current.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from indexer.embedding import Embedder, SpanEmbedder
from indexer.formats import CatalogError, parse_catalog
from indexer.model import Catalog, Tool
from indexer.naming import function_name
from indexer.retrieval.document import document_hash, document_text
from indexer.retrieval.fusion import ALL_LEVERS, Levers, clause_spans, split_intents
from indexer.retrieval.scaling import Scaling
from indexer.retrieval.snapshot import Hit, IndexedTool, ToolIndex
from indexer.retrieval.vector_index import Partition
from registry.cache import SearchCacheKey, TTLCache, normalise_query
from registry.config import APPROXIMATE_FROM
from registry.errors import CatalogNotFound, InvalidRequest, NotReady, ToolsNotFound
from registry.scopes import Grants
from registry.store import Store, StoredCatalog, StoredTool

logger = logging.getLogger(__name__)

DEFAULT_LIMIT = 5
MAX_LIMIT = 50
MAX_QUERY_CHARS = 32_000
MAX_IDS = 50
# "default" is what the server serves; the others exist for evaluation and comparison:
# baselines, and the default with one lever off at a time (the ablation).
ABLATIONS = {
    "hybrid-no-intents": Levers(intents=False),
    "hybrid-no-catalog": Levers(catalog=False),
    "hybrid-no-lexical": Levers(lexical=False),
    "hybrid-no-cut": Levers(cut=False),
    "hybrid-no-literal": Levers(literal=False),
    "hybrid-clauses-apart": Levers(joint_clauses=False),
    "hybrid-z": Levers(scaling=Scaling.Z),
    "hybrid-minmax": Levers(scaling=Scaling.MIN_MAX),
    "hybrid-rrf": Levers(scaling=Scaling.RRF),
}
RETRIEVERS = ("default", "dense", "bm25", *ABLATIONS)
# What a caller without restrictions (local development mode, internal tools) sees.
ALL = Grants.parse(["*"])


@dataclass(frozen=True)
class SearchOutcome:
    hits: list[Hit]
    generation: int
    weak_match: bool
    cached: bool = False


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class CatalogSummary:
    name: str
    title: str
    description: str
    version: str
    revision: int
    tool_count: int


@dataclass
class _Live:
    """A stored catalog with the document texts and hashes of its tools, in the same order."""

    stored: StoredCatalog
    documents: tuple[str, ...]
    doc_hashes: tuple[str, ...]
    # Tools per required-scope set: visible counts cost one check per distinct set.
    scope_counts: Counter[frozenset[str]] = field(init=False)

    def __post_init__(self) -> None:
        catalog = self.stored.catalog
        self.scope_counts = Counter(catalog.required_scopes(t) for t in catalog.tools)

    @cached_property
    def entries(self) -> tuple[IndexedTool, ...]:
        """The catalog's tools as the index serves them (kept between snapshots)."""
        catalog = self.stored.catalog
        return tuple(
            IndexedTool(
                tool=stored.tool,
                required_scopes=catalog.required_scopes(stored.tool),
                function_name=stored.function_name,
                catalog_title=catalog.title,
                catalog_version=catalog.version,
                catalog_revision=stored.revision,
            )
            for stored in self.stored.tools
        )

    def visible_count(self, viewer: Grants) -> int:
        return sum(n for scopes, n in self.scope_counts.items() if viewer.allows(scopes))


def _catalog_facts(catalog: Catalog) -> tuple[object, ...]:
    return (
        catalog.title,
        catalog.description,
        catalog.version,
        catalog.format,
        sorted(catalog.default_scopes),
    )


class Registry:
    """Catalogs, their stored embeddings, and the current searchable snapshot."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        weak_score: float = 0.3,
        query_cache_size: int = 4_096,
        result_cache_size: int = 2_048,
        result_cache_ttl: float = 300.0,
        approximate_from: int = APPROXIMATE_FROM,
        progress: bool = False,
    ) -> None:
        self._store = store
        self._approximate_from = approximate_from
        self._partition: Partition | None = None
        self._embedder = embedder
        self._weak_score = weak_score
        self._progress = progress
        self._write_lock = threading.Lock()
        self._live: dict[str, _Live] = {}
        # Function name -> tool id over every catalog: collisions are checked in O(tools
        # registered), not O(tools stored).
        self._function_owners: dict[str, str] = {}
        self._vectors: dict[str, NDArray[np.float32]] = {}
        # Digest of (name, format, bytes) of each live catalog's last registration: an
        # identical resubmission (a periodic sync) is answered without parsing.
        self._sources: dict[str, str] = {}
        self._source_of: dict[str, str] = {}
        self._index: ToolIndex | None = None
        # Inside `bulk()`: the latest generation waiting for one rebuild; otherwise None.
        self._deferred: int | None = None
        # Query text -> vector holds no tool data, so every caller may share it.
        self._query_vectors: TTLCache[str, NDArray[np.float32]] = TTLCache(
            max_entries=query_cache_size, ttl_seconds=24 * 3600.0
        )
        # Results are keyed by the caller's visibility class and the index generation, so one
        # caller's results can never reach a caller who sees differently, nor outlive a change.
        self._results: TTLCache[SearchCacheKey, SearchOutcome] = TTLCache(
            max_entries=result_cache_size, ttl_seconds=result_cache_ttl
        )

    # -- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Restores every stored catalog and builds the index; embeds only what the store lacks
        (nothing, unless the model or the document text changed)."""
        started = time.perf_counter()
        with self._write_lock:
            live = {}
            texts: dict[str, str] = {}
            for stored in self._store.catalogs():
                documents = tuple(document_text(t.tool, stored.catalog.title) for t in stored.tools)
                hashes = tuple(document_hash(text) for text in documents)
                texts.update(zip(hashes, documents, strict=True))
                live[stored.catalog.name] = _Live(stored, documents, hashes)
            self._vectors = {}
            embedded = self._ensure_vectors(texts)
            self._live = live
            self._sources, self._source_of = {}, {}
            self._function_owners = {
                t.function_name: t.tool.id for entry in live.values() for t in entry.stored.tools
            }
            self._rebuild(self._store.generation())
        logger.info(
            "loaded %d catalogs, %d tools in %.2fs (%d embedded)",
            len(self._live),
            len(self.index),
            time.perf_counter() - started,
            embedded,
        )

    @property
    def ready(self) -> bool:
        return self._index is not None

    @property
    def index(self) -> ToolIndex:
        index = self._index
        if index is None:
            raise NotReady("the index is loading; retry shortly")
        return index

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    # -- writes ----------------------------------------------------------------------------

    def register(self, content: str, *, name: str = "", fmt: str = "") -> RegisterOutcome:
        """Validates, embeds what changed, and replaces the catalog in one transaction."""
        self.index  # noqa: B018 -- raises NotReady before any work when still loading
        digest = hashlib.sha256(f"{name}\0{fmt}\0{content}".encode()).hexdigest()
        with self._write_lock:
            unchanged = self._unchanged_source(digest)
            if unchanged is not None:
                return unchanged
        catalog = parse_catalog(content, name=name, fmt=fmt)
        with self._write_lock:
            outcome = self._replace(catalog)
            self._forget_source(catalog.name)
            self._sources[digest] = catalog.name
            self._source_of[catalog.name] = digest
            return outcome

    def _unchanged_source(self, digest: str) -> RegisterOutcome | None:
        """The outcome for a byte-identical resubmission of a live catalog (no parsing: the
        same bytes, name and format parse to the same catalog)."""
        name = self._sources.get(digest)
        live = self._live.get(name) if name is not None else None
        if name is None or live is None:
            return None
        stored = live.stored
        return RegisterOutcome(
            name, 0, 0, 0, len(stored.tools), stored.catalog.version, stored.revision,
            self.index.generation, 0,
        )  # fmt: skip

    def _forget_source(self, name: str) -> None:
        digest = self._source_of.pop(name, None)
        if digest is not None:
            self._sources.pop(digest, None)

    def _replace(self, catalog: Catalog) -> RegisterOutcome:
        current = self._live.get(catalog.name)
        old = {t.tool.name: t for t in current.stored.tools} if current else {}
        names = [function_name(catalog.name, tool.name) for tool in catalog.tools]
        self._check_function_names(catalog, names)
        texts = [document_text(tool, catalog.title) for tool in catalog.tools]
        hashes = tuple(document_hash(text) for text in texts)

        added = updated = unchanged = 0
        changed: list[Tool] = []
        for tool in catalog.tools:
            previous = old.get(tool.name)
            if previous is None:
                added += 1
                changed.append(tool)
            elif previous.tool.content_hash() != tool.content_hash():
                updated += 1
                changed.append(tool)
            else:
                unchanged += 1
        removed = len(set(old) - {tool.name for tool in catalog.tools})
        facts_changed = current is None or _catalog_facts(current.stored.catalog) != (
            _catalog_facts(catalog)
        )
        if current is not None and not (changed or removed or facts_changed):
            return RegisterOutcome(
                catalog.name, 0, 0, 0, unchanged, catalog.version, current.stored.revision,
                self.index.generation, 0,
            )  # fmt: skip

        revision = current.stored.revision + 1 if current else 1
        changed_names = {tool.name for tool in changed}
        stored_tools = tuple(
            StoredTool(
                tool,
                fname,
                revision if tool.name in changed_names else old[tool.name].revision,
            )
            for tool, fname in zip(catalog.tools, names, strict=True)
        )
        new_vectors = self._embed_missing(dict(zip(hashes, texts, strict=True)))
        generation = self._store.replace_catalog(
            catalog, revision, stored_tools, self._embedder.model_id, new_vectors
        )
        self._vectors.update(new_vectors)
        if current is not None:
            self._forget_functions(current)
        self._live[catalog.name] = _Live(
            StoredCatalog(catalog, revision, stored_tools), tuple(texts), hashes
        )
        self._function_owners.update((t.function_name, t.tool.id) for t in stored_tools)
        self._rebuild(generation)
        logger.info(
            "registered catalog %s r%d: +%d ~%d -%d =%d (%d embedded), generation %d",
            catalog.name, revision, added, updated, removed, unchanged, len(new_vectors),
            generation,
        )  # fmt: skip
        return RegisterOutcome(
            catalog.name, added, updated, removed, unchanged, catalog.version, revision,
            generation, len(new_vectors),
        )  # fmt: skip

    def _forget_functions(self, live: _Live) -> None:
        for stored in live.stored.tools:
            if self._function_owners.get(stored.function_name) == stored.tool.id:
                del self._function_owners[stored.function_name]

    def _check_function_names(self, catalog: Catalog, names: Sequence[str]) -> None:
        prefix = catalog.name + "/"
        problems = []
        seen: dict[str, str] = {}
        for tool, fname in zip(catalog.tools, names, strict=True):
            owner = self._function_owners.get(fname)
            # This catalog's own previous tools are being replaced: they cannot collide.
            taken = owner if owner is not None and not owner.startswith(prefix) else None
            other = taken or seen.get(fname)
            if other is not None and other != tool.id:
                problems.append(
                    f"tool '{tool.name}': its function name '{fname}' is already used by "
                    f"'{other}'; rename the tool"
                )
            seen[fname] = tool.id
        if problems:
            raise CatalogError(catalog.name, problems)

    def delete(self, name: str) -> tuple[int, int]:
        """Removes a catalog; returns (tools removed, new generation)."""
        self.index  # noqa: B018 -- raises NotReady while loading
        with self._write_lock:
            current = self._live.get(name)
            if current is None:
                raise CatalogNotFound(name, self._close_catalogs(name, ALL))
            generation = self._store.delete_catalog(name)
            if generation is None:  # pragma: no cover - memory and store disagree
                raise CatalogNotFound(name)
            del self._live[name]
            self._forget_source(name)
            self._forget_functions(current)
            self._rebuild(generation)
            return len(current.stored.tools), generation

    def _embed_missing(self, texts: dict[str, str]) -> dict[str, NDArray[np.float32]]:
        """Vectors for document hashes this process has not seen, from the store or the model."""
        missing = [h for h in texts if h not in self._vectors]
        stored = self._store.embeddings(self._embedder.model_id, missing)
        self._vectors.update(stored)
        to_embed = [h for h in missing if h not in stored]
        if not to_embed:
            return {}
        vectors = self._embedder.encode([texts[h] for h in to_embed], progress=self._progress)
        return dict(zip(to_embed, vectors, strict=True))

    def _ensure_vectors(self, texts: dict[str, str]) -> int:
        new_vectors = self._embed_missing(texts)
        if new_vectors:
            self._store.put_embeddings(self._embedder.model_id, new_vectors)
            self._vectors.update(new_vectors)
        return len(new_vectors)

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Registers and deletes inside this block rebuild the index once, at the end.

        Each change is still its own transaction; searches meanwhile see the snapshot from
        before the block. Loading hundreds of catalogs otherwise rebuilds hundreds of times.
        """
        with self._write_lock:
            self._deferred = 0
        try:
            yield
        finally:
            with self._write_lock:
                generation, self._deferred = self._deferred, None
                if generation:
                    self._rebuild(generation, force=True)

    def _rebuild(self, generation: int, *, force: bool = False) -> None:
        if self._deferred is not None and not force:
            self._deferred = generation
            return
        entries = [entry for live in self._live.values() for entry in live.entries]
        keys = [doc_hash for live in self._live.values() for doc_hash in live.doc_hashes]
        documents = [text for live in self._live.values() for text in live.documents]
        vectors = self._vectors
        rows = [vectors[doc_hash] for doc_hash in keys]
        dimension = self._embedder.dimension
        matrix = np.vstack(rows) if rows else np.zeros((0, dimension), dtype=np.float32)
        partition = self._partition_for(matrix) if len(rows) >= self._approximate_from else None
        # Built whole (BM25 document index included) before the swap, so no search pays for
        # it: the old snapshot answers meanwhile.
        index = ToolIndex(
            entries, matrix, generation, partition=partition, keys=keys, documents=documents
        )
        # Swapping one reference is atomic: readers see the old or the new snapshot whole.
        self._index = index

    def _partition_for(self, matrix: NDArray[np.float32]) -> Partition:
        """The IVF partition for a corpus this size: the current one, the stored one, or a new
        one trained now and stored (so a restart does not train again)."""
        size = len(matrix)
        if self._partition is not None and self._partition.fits(size):
            return self._partition
        model = self._embedder.model_id
        stored = self._store.partition(model)
        if stored is not None and stored[0].shape[1] == matrix.shape[1]:
            candidate = Partition(*stored)
            if candidate.fits(size):
                self._partition = candidate
                return candidate
        started = time.perf_counter()
        self._partition = Partition.train(matrix)
        self._store.put_partition(model, self._partition.centroids, size)
        logger.info(
            "trained an IVF partition of %d lists on %d tools in %.2fs",
            len(self._partition.centroids), size, time.perf_counter() - started,
        )  # fmt: skip
        return self._partition

    # -- reads -----------------------------------------------------------------------------

    def warm_queries(self, queries: Sequence[str], *, progress: bool = False) -> None:
        """Encodes many queries (and their clauses) ahead of time: evaluations run thousands."""
        if not isinstance(self._embedder, SpanEmbedder):
            texts = [t for q in queries for t in (q.strip(), *split_intents(q.strip()))]
            self.embed_queries(texts, progress=progress)
            return
        single = [q.strip() for q in queries if not split_intents(q.strip())]
        self.embed_queries(single, progress=progress)
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
            return self.embed_queries([text, *clauses])
        key = normalise_query(text)
        keys = [key, *(f"{key}\0{clause}" for clause in clauses)]
        found = [self._query_vectors.get(k) for k in keys]
        if any(v is None for v in found):
            pooled = embedder.encode_spans(text, clause_spans(text, list(clauses)))
            # A clause past the model's window was not seen in that pass: encode it alone.
            alone = [clauses[i] for i, v in enumerate(pooled[1:]) if v is None]
            extra = iter(self.embed_queries(alone)) if alone else iter(())
            vectors = [v if v is not None else next(extra) for v in pooled]
            for k, vector in zip(keys, vectors, strict=True):
                self._query_vectors.put(k, vector)
            return vectors
        return [v for v in found if v is not None]

    def embed_query(self, query: str) -> NDArray[np.float32]:
        return self.embed_queries([query])[0]

    def embed_queries(
        self, queries: Sequence[str], *, progress: bool = False
    ) -> list[NDArray[np.float32]]:
        """Vectors for `queries`, encoding only those not cached, in one batch."""
        keys = [normalise_query(q) for q in queries]
        found = {key: self._query_vectors.get(key) for key in keys}
        missing = list(dict.fromkeys(k for k, v in found.items() if v is None))
        if missing:
            vectors = self._embedder.encode(missing, progress=progress)
            for key, vector in zip(missing, vectors, strict=True):
                found[key] = vector
                self._query_vectors.put(key, vector)
        return [v for v in (found[k] for k in keys) if v is not None]

    def search(
        self,
        query: str,
        limit: int = 0,
        catalogs: Iterable[str] = (),
        viewer: Grants = ALL,
        retriever: str = "default",
    ) -> SearchOutcome:
        index = self.index
        text = query.strip()
        if not text:
            raise InvalidRequest("query must not be empty: describe the capability you need")
        if len(text) > MAX_QUERY_CHARS:
            raise InvalidRequest(f"query must be at most {MAX_QUERY_CHARS} characters")
        if limit < 0 or limit > MAX_LIMIT:
            raise InvalidRequest(f"limit must be between 1 and {MAX_LIMIT} (0 for the default)")
        if retriever not in RETRIEVERS:
            raise InvalidRequest(f"retriever must be one of {', '.join(RETRIEVERS)}")
        wanted = sorted(set(catalogs))
        for name in wanted:
            live = self._live.get(name)
            if live is None or not live.visible_count(viewer):
                raise CatalogNotFound(name, self._close_catalogs(name, viewer))
        key = SearchCacheKey(
            query=text,
            limit=limit or DEFAULT_LIMIT,
            catalogs=tuple(wanted),
            visibility_class=viewer.visibility_class,
            generation=index.generation,
            filters=(("retriever", retriever),),
        )
        cached = self._cached(key)
        if cached is not None:
            return replace(cached, cached=True)
        if retriever == "bm25":
            hits = index.search_lexical(text, key.limit, catalogs=wanted, visible=viewer.allows)
            weak = not hits
        elif retriever == "dense":
            hits = index.search(
                self.embed_query(text), key.limit, catalogs=wanted, visible=viewer.allows
            )
            weak = not hits or hits[0].score < self._weak_score
        else:
            levers = ABLATIONS.get(retriever, ALL_LEVERS)
            clauses = split_intents(text) if levers.intents else []
            hits = index.search_hybrid(
                [text, *clauses],
                self.request_vectors(text, clauses, joint=levers.joint_clauses),
                key.limit,
                # A caller who names no limit gets the registry's confident set (<= 5).
                confident_only=limit == 0 and levers.cut,
                levers=levers,
                catalogs=wanted,
                visible=viewer.allows,
            )
            weak = not hits or max(h.similarity for h in hits) < self._weak_score
        outcome = SearchOutcome(hits, index.generation, weak)
        self._remember(key, outcome)
        return outcome

    def _cached(self, key: SearchCacheKey) -> SearchOutcome | None:
        try:
            return self._results.get(key)
        except Exception:  # a cache fault costs a recomputation, never the request
            logger.exception("result cache lookup failed")
            return None

    def _remember(self, key: SearchCacheKey, outcome: SearchOutcome) -> None:
        try:
            self._results.put(key, outcome)
        except Exception:  # a cache fault costs a recomputation, never the request
            logger.exception("result cache store failed")

    def schemas(self, ids: Sequence[str], viewer: Grants = ALL) -> list[IndexedTool]:
        """The tools for `ids` in request order (duplicates once); every id must be visible."""
        index = self.index
        unique = list(dict.fromkeys(ids))
        if not unique:
            raise InvalidRequest("ids must name at least one tool id ('<catalog>/<tool>')")
        if len(unique) > MAX_IDS:
            raise InvalidRequest(f"at most {MAX_IDS} ids per call (got {len(unique)})")
        found = {tool_id: index.get(tool_id, viewer.allows) for tool_id in unique}
        missing = {
            i: index.suggestions(i, viewer.allows) for i, entry in found.items() if entry is None
        }
        if missing:
            raise ToolsNotFound(missing)
        return [entry for entry in found.values() if entry is not None]

    def catalogs(self, viewer: Grants = ALL) -> list[CatalogSummary]:
        """Catalogs with at least one tool the caller may see, with visible counts."""
        result = []
        for name in sorted(self._live):
            live = self._live[name]
            count = live.visible_count(viewer)
            # An empty catalog is listed only to callers who may see everything.
            if count or viewer == ALL:
                catalog = live.stored.catalog
                result.append(
                    CatalogSummary(
                        name, catalog.title, catalog.description, catalog.version,
                        live.stored.revision, count,
                    )
                )  # fmt: skip
        return result

    def _close_catalogs(self, name: str, viewer: Grants) -> list[str]:
        names = [c.name for c in self.catalogs(viewer)]
        return difflib.get_close_matches(name, names, n=3, cutoff=0.5)
