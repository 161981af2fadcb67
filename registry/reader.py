"""The read side: one immutable snapshot answers a search, a schema fetch or a listing whole.

The writer builds a `Snapshot` for every change and publishes it by swapping one reference;
a read takes that reference once and answers from it alone, so its hits, schemas, catalog
counts and generation always belong together, whatever a concurrent write does.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from indexer.formats.lint import discovery_warnings
from indexer.model import Catalog, Workflow
from indexer.retrieval.adapter import QueryAdapter
from indexer.retrieval.learned import LearnedStage
from indexer.retrieval.retrievers import RETRIEVERS, STRATEGIES, Models, Retriever, Search
from indexer.retrieval.tool_index import Hit, IndexedTool, ToolIndex, everything
from registry.auth.scopes import Grants
from registry.cache import SearchCacheKey, TTLCache
from registry.errors import CatalogNotFound, InvalidRequest, NotReady, ToolsNotFound
from registry.queries import QueryEncoder
from registry.wire import (
    DEFAULT_LIMIT,
    MAX_CATALOG_FILTERS,
    MAX_CATALOG_NAME_CHARS,
    MAX_IDS,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    MAX_TOOL_ID_CHARS,
)
from registry.workflows import Affordances, affordances, check_request, not_found, workflow_id

logger = logging.getLogger(__name__)

# What a caller without restrictions (local development mode, internal tools) sees.
ALL = Grants.parse(["*"])


@dataclass(frozen=True, kw_only=True)
class SearchOutcome:
    hits: list[Hit]
    generation: int
    weak_match: bool
    cached: bool = False


@dataclass(frozen=True, kw_only=True)
class CatalogSummary:
    name: str
    title: str
    description: str
    version: str
    revision: int
    tool_count: int
    workflows: tuple[Workflow, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class CatalogView:
    """What a snapshot knows of one catalog: its facts and how many tools each scope set
    guards (a visible count costs one check per distinct set, not per tool)."""

    name: str
    title: str
    description: str
    version: str
    revision: int
    scope_counts: Mapping[frozenset[str], int]
    workflows: tuple[Workflow, ...] = ()
    # The catalog itself, for what is computed only when asked (lint warnings).
    source: Catalog | None = field(default=None, repr=False, compare=False)

    def visible_count(self, viewer: Grants) -> int:
        return sum(n for scopes, n in self.scope_counts.items() if viewer.allows(scopes))

    def sees_whole(self, viewer: Grants) -> bool:
        return self.visible_count(viewer) == sum(self.scope_counts.values())

    @cached_property
    def warnings(self) -> tuple[str, ...]:
        """What `capreg lint` warns about (computed on first use: listings rarely ask)."""
        return tuple(discovery_warnings(self.source)) if self.source is not None else ()


@dataclass(frozen=True)
class Snapshot:
    """The searchable index and the catalog listing of one generation, never mutated."""

    index: ToolIndex
    catalogs: Mapping[str, CatalogView]
    # Per required-scope set: the generation of the last change to a tool it guards.
    touched: Mapping[frozenset[str], int] = field(default_factory=dict)
    # Each caller's view generation, once computed (the snapshot never changes).
    _generations: dict[Grants, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def generation(self) -> int:
        """The registry's generation (internal: cache keys, read-your-writes)."""
        return self.index.generation

    def view_generation(self, viewer: Grants) -> int:
        """The generation a caller is told: the last change to anything it may see, so a
        change it may not see is not revealed by a new number."""
        if viewer == ALL:
            return self.generation
        found = self._generations.get(viewer)
        if found is None:
            seen = [g for scopes, g in self.touched.items() if viewer.allows(scopes)]
            found = self._generations.setdefault(viewer, max(seen, default=0))
        return found

    def catalog_summaries(
        self, viewer: Grants = ALL, *, with_warnings: bool = False
    ) -> list[CatalogSummary]:
        """Catalogs with at least one tool the caller may see, with visible counts; with
        `with_warnings`, the lint warnings of each catalog the caller sees whole (a warning
        names tools, which a partial viewer may not know of)."""
        result = []
        for name in sorted(self.catalogs):
            view = self.catalogs[name]
            count = view.visible_count(viewer)
            # An empty catalog is listed only to callers who may see everything.
            if count or viewer == ALL:
                warned = with_warnings and view.sees_whole(viewer)
                result.append(
                    CatalogSummary(
                        name=name,
                        title=view.title,
                        description=view.description,
                        version=view.version,
                        revision=view.revision,
                        tool_count=count,
                        workflows=view.workflows,
                        warnings=view.warnings if warned else (),
                    )
                )
        return result

    def visible_workflows(self, viewer: Grants) -> dict[str, tuple[str, Workflow]]:
        """Workflow id -> (catalog, workflow), for the catalogs the caller may see."""
        return {
            workflow_id(name, workflow.name): (name, workflow)
            for name, view in self.catalogs.items()
            if view.workflows and view.visible_count(viewer)
            for workflow in view.workflows
        }

    def affordances(
        self,
        wanted: str,
        state: str = "",
        tool: str = "",
        viewer: Grants = ALL,
        arguments: str = "",
    ) -> Affordances:
        """The moves legal for the caller in `state` of workflow `wanted` (see
        registry.workflows.affordances)."""
        check_request(wanted, state, tool, arguments)
        catalog, _, name = wanted.partition("/")
        view = self.catalogs.get(catalog)
        found = next((w for w in view.workflows if w.name == name), None) if view else None
        if view is None or found is None or not view.visible_count(viewer):
            raise not_found(wanted, self.visible_workflows(viewer))
        return affordances(
            wanted,
            found,
            catalog=catalog,
            state=state,
            tool=tool,
            arguments=arguments,
            lookup=lambda tool_id: self.index.get(tool_id, viewer.allows),
            viewer=viewer,
        )

    def close_catalogs(self, name: str, viewer: Grants) -> list[str]:
        names = [c.name for c in self.catalog_summaries(viewer)]
        return difflib.get_close_matches(name, names, n=3, cutoff=0.5)

    def require_catalogs(self, names: Iterable[str], viewer: Grants) -> list[str]:
        """`names` sorted and unique; each must hold a tool the caller may see."""
        wanted = sorted(set(names))
        for name in wanted:
            view = self.catalogs.get(name)
            if view is None or not view.visible_count(viewer):
                raise CatalogNotFound(name, self.close_catalogs(name, viewer))
        return wanted

    def schemas(self, ids: Sequence[str], viewer: Grants = ALL) -> list[IndexedTool]:
        """The tools for `ids` in request order (duplicates once), each with the links the
        caller may follow; every id must be visible."""
        if len(ids) > MAX_IDS:
            raise InvalidRequest(f"ids: at most {MAX_IDS} per call (got {len(ids)})")
        for position, tool_id in enumerate(ids):
            if len(tool_id) > MAX_TOOL_ID_CHARS:
                raise InvalidRequest(
                    f"ids[{position}]: a tool id is at most {MAX_TOOL_ID_CHARS} characters "
                    f"(got {len(tool_id)})"
                )
        unique = list(dict.fromkeys(ids))
        if not unique:
            raise InvalidRequest("ids must name at least one tool id ('<catalog>/<tool>')")
        found = {tool_id: self.index.get(tool_id, viewer.allows) for tool_id in unique}
        missing = {
            i: self.index.suggestions(i, viewer.allows)
            for i, entry in found.items()
            if entry is None
        }
        if missing:
            raise ToolsNotFound(missing)
        return [
            self.with_visible_links(entry, viewer) for entry in found.values() if entry is not None
        ]

    def with_visible_links(self, entry: IndexedTool, viewer: Grants = ALL) -> IndexedTool:
        """`entry` with only the links the caller may follow: to a tool of this snapshot it
        may see. A link to an invisible tool is dropped exactly like one to a missing tool,
        so the answer is the same whether that tool exists or not."""
        kept = tuple(link for link in entry.links if self.index.get(link.target_id, viewer.allows))
        return entry if len(kept) == len(entry.links) else replace(entry, links=kept)


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
        hits, weak = self._rank(request)
        generation = request.snapshot.view_generation(request.viewer)
        outcome = SearchOutcome(hits=hits, generation=generation, weak_match=weak)
        self._remember(request.key, outcome)
        return outcome

    def _rank(self, request: SearchRequest) -> tuple[list[Hit], bool]:
        """The request's hits and whether they are weak, by its retriever's strategy."""
        if request.tools is not None and not request.tools:
            return [], True  # a state offering this caller nothing: nothing can fit
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
        answer = STRATEGIES[request.retriever](request.snapshot.index, search, self._models)
        return answer.hits, answer.weak

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
