"""The read side: one immutable snapshot answers a search, a schema fetch or a listing whole.

The writer builds a `Snapshot` for every change and publishes it by swapping one reference;
a read takes that reference once and answers from it alone, so its hits, schemas, catalog
counts and generation always belong together, whatever a concurrent write does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from indexer.retrieval.adapter import QueryAdapter
from indexer.retrieval.learned import LearnedStage, WeakReason
from indexer.retrieval.retrievers import (
    RETRIEVERS,
    STRATEGIES,
    Answer,
    Models,
    Retriever,
    Search,
)
from indexer.retrieval.tool_index import Hit, everything
from registry.auth.scopes import Grants
from registry.cache import SearchCacheKey, TTLCache
from registry.errors import InvalidRequest, NotReady
from registry.queries import QueryEncoder
from registry.snapshot import ALL, Snapshot
from registry.wire import (
    DEFAULT_LIMIT,
    MAX_CATALOG_FILTERS,
    MAX_CATALOG_NAME_CHARS,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class SearchOutcome:
    hits: list[Hit]
    generation: int
    weak_match: bool
    cached: bool = False
    # Why the match is weak (None when it is not).
    weak_reason: WeakReason | None = None


@dataclass(frozen=True, kw_only=True)
class SearchRequest:
    """A checked search, bound to the snapshot that will answer it."""

    snapshot: Snapshot
    text: str
    limit: int
    catalogs: list[str]
    viewer: Grants
    retriever: Retriever
    key: SearchCacheKey
    # A workflow state's legal tools, when the search is limited to them; None: no limit.
    tools: tuple[str, ...] | None = None


def bounded_catalogs(names: Iterable[str]) -> list[str]:
    """A catalog filter, refused before any work when it is too long or names too long."""
    names = list(names)
    if len(names) > MAX_CATALOG_FILTERS:
        raise InvalidRequest(
            f"catalogs: at most {MAX_CATALOG_FILTERS} per request (got {len(names)})"
        )
    for position, name in enumerate(names):
        if len(name) > MAX_CATALOG_NAME_CHARS:
            raise InvalidRequest(
                f"catalogs[{position}]: a catalog name is at most {MAX_CATALOG_NAME_CHARS} "
                f"characters (got {len(name)})"
            )
    return names


class Reader:
    """Answers queries from the current snapshot, with the query and result caches."""

    def __init__(
        self,
        queries: QueryEncoder,
        *,
        weak_score: float,
        learned: LearnedStage | None = None,
        result_cache_size: int,
        result_cache_ttl: float,
    ) -> None:
        self._queries = queries
        adapter = learned.adapter if learned is not None else None
        embedder = queries.embedder
        if adapter is not None and not adapter.fits(embedder.model_id, embedder.dimension):
            # A map fitted in another model's space would move requests somewhere arbitrary.
            logger.warning(
                "the learned stage's query adapter was fitted for %s (dimension %d), not %s "
                "(dimension %d); requests are ranked without it",
                adapter.model,
                adapter.dimension,
                embedder.model_id,
                embedder.dimension,
            )
            adapter = None
        self._models = Models(
            encoder=queries, weak_score=weak_score, learned=learned, adapter=adapter
        )
        self._snapshot: Snapshot | None = None
        # While set, data calls are refused with what it says (an initial sync is running).
        self._held: Callable[[], str] | None = None
        # Results are keyed by the caller's visibility class and the snapshot's generation,
        # so one caller's results never reach a caller who sees differently, nor outlive a
        # change.
        self._results: TTLCache[SearchCacheKey, SearchOutcome] = TTLCache(
            max_entries=result_cache_size, ttl_seconds=result_cache_ttl
        )

    @property
    def query_adapter(self) -> QueryAdapter | None:
        """The learned stage's query adapter, when it fits the embedder's space."""
        return self._models.adapter

    def publish(self, snapshot: Snapshot) -> None:
        # Swapping one reference is atomic: readers see the old or the new snapshot whole.
        self._snapshot = snapshot

    def hold(self, progress: Callable[[], str]) -> None:
        """Refuses every read with NotReady naming `progress()` until `release`: the
        snapshot may be incomplete (a folder still registering), and an answer from it would
        look complete to the caller."""
        self._held = progress

    def release(self) -> None:
        self._held = None

    @property
    def ready(self) -> bool:
        return self._snapshot is not None and self._held is None

    @property
    def snapshot(self) -> Snapshot:
        held = self._held
        if held is not None:
            raise NotReady(f"the registry is loading ({held()}); retry shortly")
        snapshot = self._snapshot
        if snapshot is None:
            raise NotReady("the registry is loading its stored catalogs; retry shortly")
        return snapshot

    @property
    def queries(self) -> QueryEncoder:
        return self._queries

    @property
    def results(self) -> TTLCache[SearchCacheKey, SearchOutcome]:
        """The result cache (read for its hit and miss counts)."""
        return self._results

    def search(
        self,
        query: str,
        limit: int = 0,
        catalogs: Iterable[str] = (),
        viewer: Grants = ALL,
        retriever: str = Retriever.DEFAULT,
        *,
        workflow: str = "",
        state: str = "",
    ) -> SearchOutcome:
        request = self.prepare(
            query, limit, catalogs, viewer, retriever, workflow=workflow, state=state
        )
        return self.lookup(request) or self.answer(request)

    def prepare(
        self,
        query: str,
        limit: int = 0,
        catalogs: Iterable[str] = (),
        viewer: Grants = ALL,
        retriever: str = Retriever.DEFAULT,
        *,
        workflow: str = "",
        state: str = "",
    ) -> SearchRequest:
        """Checks a search against the current snapshot and names its cache entry: cheap
        (no model work), so a transport can do it on its event loop. With `workflow`, only
        the tools legal in `state` for this caller are ranked."""
        snapshot = self.snapshot
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidRequest(f"query: at most {MAX_QUERY_CHARS} characters (got {len(query)})")
        text = query.strip()
        if not text:
            raise InvalidRequest("query must not be empty: describe the capability you need")
        if limit < 0 or limit > MAX_LIMIT:
            raise InvalidRequest(f"limit must be between 1 and {MAX_LIMIT} (0 for the default)")
        if retriever not in RETRIEVERS:
            raise InvalidRequest(f"retriever must be one of {', '.join(RETRIEVERS)}")
        wanted = snapshot.require_catalogs(bounded_catalogs(catalogs), viewer)
        filters: tuple[tuple[str, str], ...] = (("retriever", retriever),)
        tools = None
        if workflow or state:
            moves = snapshot.affordances(workflow, state, viewer=viewer)
            tools = moves.tool_ids
            filters += (("workflow", workflow), ("state", moves.state.name))
        # The key is the request's meaning: limit 0 (the confident set) and limit 5 (exactly the
        # top five) are different requests.
        key = SearchCacheKey(
            query=text,
            limit=limit,
            catalogs=tuple(wanted),
            visibility_class=viewer.visibility_class,
            generation=snapshot.generation,
            filters=filters,
        )
        return SearchRequest(
            snapshot=snapshot,
            text=text,
            limit=limit,
            catalogs=wanted,
            viewer=viewer,
            retriever=Retriever(retriever),
            key=key,
            tools=tools,
        )

    def lookup(self, request: SearchRequest) -> SearchOutcome | None:
        """The cached answer to `request`, if any: a dictionary lookup, nothing more."""
        cached = self._cached(request.key)
        return replace(cached, cached=True) if cached is not None else None

    def answer(self, request: SearchRequest) -> SearchOutcome:
        """Ranks `request` on its snapshot (model work) and caches the outcome."""
        answer = self._rank(request)
        generation = request.snapshot.view_generation(request.viewer)
        outcome = SearchOutcome(
            hits=answer.hits,
            generation=generation,
            weak_match=answer.weak,
            weak_reason=answer.reason,
        )
        self._remember(request.key, outcome)
        return outcome

    def _rank(self, request: SearchRequest) -> Answer:
        """The request's hits and whether (and why) they are weak, by its retriever's
        strategy."""
        if request.tools is not None and not request.tools:
            # A state offering this caller nothing: nothing can fit.
            return Answer.judged([], close=False)
        viewer = request.viewer
        search = Search(
            text=request.text,
            limit=request.limit or DEFAULT_LIMIT,
            # A caller who names no limit gets the registry's confident set (<= 5).
            confident_only=request.limit == 0,
            visible=everything if viewer.sees_everything else viewer.allows,
            catalogs=request.catalogs,
            tools=request.tools,
        )
        # Query vectors as this caller's audience has them: another audience's cached vector
        # would answer faster, telling it someone asked the same (decision 0067).
        models = replace(self._models, encoder=self._queries.seen_by(viewer.visibility_class))
        return STRATEGIES[request.retriever](request.snapshot.index, search, models)

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
