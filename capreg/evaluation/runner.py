"""Evaluation runs: labeled queries through the registry's search path, in this process or
against a running registry through `registry.client` (TLS and keys as for every client)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path

from indexer.embedding import EmbedderBackend, load_embedder
from indexer.errors import CapregError
from indexer.evaluation.catalog_names import SlugAllocator, slugify
from indexer.evaluation.datasets import CatalogSource, LabeledQuery, load_dataset
from indexer.evaluation.metrics import KS
from indexer.evaluation.report import Answer, Report, Searcher, run
from indexer.formats import CatalogError
from indexer.formats.rules import check_catalog_name
from indexer.retrieval.retrievers import Retriever
from indexer.retrieval.vector_index import one_thread_per_search
from registry.client import RegistryCallFailed, RegistryClient, RegistryTarget
from registry.config import APPROXIMATE_FROM, SearchSettings
from registry.core import Registry
from registry.ingest.catalog_dir import CATALOG_SUFFIXES, read_catalog_file, request_name
from registry.store import SqliteStore


class IndexMode(StrEnum):
    """Which vector index an evaluation uses: the served choice by size, or one at every size."""

    AUTO = "auto"
    EXACT = "exact"
    APPROXIMATE = "approximate"


# The size from which the vector index is approximate (IVF), per mode.
INDEX_MODES = {IndexMode.AUTO: APPROXIMATE_FROM, IndexMode.EXACT: 2**62, IndexMode.APPROXIMATE: 1}

DEFAULT_WORKDIR = Path(".capreg") / "eval"


class EvalError(CapregError):
    """Bad evaluation input: the message names the file or entry."""


@dataclass(frozen=True, kw_only=True)
class EvalPlan:
    """One evaluation, as the CLI read it: what to measure, against what, and how."""

    dataset: str | None = None
    datasets: Path | None = None
    catalogs: tuple[Path, ...] = ()
    queries: Path | None = None
    retrievers: tuple[str, ...] = (Retriever.BM25, Retriever.DENSE, Retriever.DEFAULT)
    ks: tuple[int, ...] = KS
    limit: int = 0
    max_queries: int = 0
    # Measure a running registry through registry.client instead of one in this process.
    server: RegistryTarget | None = None
    db: Path | None = None
    model: Path | None = None
    model_cache: Path | None = None
    embedder: EmbedderBackend = EmbedderBackend.ONNX
    index: IndexMode = IndexMode.AUTO
    progress: bool = False


@dataclass(frozen=True, kw_only=True)
class CatalogRename:
    """A catalog file whose stem is not a valid catalog name, and the name it was given."""

    path: Path
    stem: str
    name: str


def generic_catalogs(paths: Sequence[Path]) -> tuple[list[CatalogSource], list[CatalogRename]]:
    """Catalog files (or folders of them) in any supported format, and the files renamed
    because their stem (a non-native catalog's name) is not a valid catalog name."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in CATALOG_SUFFIXES))
        elif path.is_file():
            files.append(path)
        else:
            raise EvalError(f"--catalog {path}: no such file or folder")
    named = []
    for file in files:
        try:
            content = read_catalog_file(file)
        except CatalogError as exc:
            raise EvalError(f"--catalog {file}: {'; '.join(exc.problems)}") from exc
        named.append((file, content, request_name(file, content)))
    # Valid stems keep their names; a renamed file takes a name none of them has.
    allocator = SlugAllocator(name for _, _, name in named if check_catalog_name(name) is None)
    sources, renames = [], []
    for file, content, stem in named:
        name = stem
        if stem and check_catalog_name(stem) is not None:
            name = _new_name(allocator, file, stem)
            renames.append(CatalogRename(path=file, stem=stem, name=name))
        sources.append(CatalogSource(name=name, content=content, format=""))
    return sources, renames


def _new_name(allocator: SlugAllocator, file: Path, stem: str) -> str:
    fix = "rename the file, or make it a native catalog with a `name:`"
    if not slugify(stem):
        raise EvalError(f"--catalog {file}: no valid catalog name can be made from {stem!r}; {fix}")
    try:
        return allocator.allocate(stem)
    except ValueError as exc:
        raise EvalError(f"--catalog {file}: {exc}; {fix}") from exc


def follow_renames(
    queries: Sequence[LabeledQuery], renames: Sequence[CatalogRename]
) -> list[LabeledQuery]:
    """`queries` with relevant ids that name a renamed file's stem as their catalog moved to
    the name the catalog was registered under."""
    new_name = {rename.stem: rename.name for rename in renames}

    def follow(tool_id: str) -> str:
        catalog, slash, tool = tool_id.partition("/")
        return f"{new_name[catalog]}/{tool}" if slash and catalog in new_name else tool_id

    return [
        replace(query, relevant=frozenset(follow(tool_id) for tool_id in query.relevant))
        for query in queries
    ]


def read_queries(path: Path) -> list[LabeledQuery]:
    """JSON lines of {"id", "query", "relevant": ["<catalog>/<tool>", ...], "kind"}; "kind"
    (optional: paraphrase, multi, exact, none or any label) groups the figures per kind."""
    queries = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EvalError(f"--queries {path}: {exc.strerror}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            relevant, kind = entry.get("relevant", []), entry.get("kind", "")
            if not isinstance(entry["query"], str) or not isinstance(relevant, list):
                raise TypeError("query must be a string and relevant a list")
            if not isinstance(kind, str):
                raise TypeError("kind must be a string")
            queries.append(
                LabeledQuery(
                    id=str(entry.get("id", number)),
                    query=entry["query"],
                    relevant=frozenset(relevant),
                    kind=kind,
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EvalError(f"{path}:{number}: {exc}") from exc
    return queries


def load_catalogs(registry: Registry, sources: Sequence[CatalogSource]) -> int:
    """Registers `sources` through the normal path and removes any other catalog."""
    wanted = set()
    with registry.bulk():
        for source in sources:
            outcome = registry.register(source.content, name=source.name, fmt=source.format)
            wanted.add(outcome.catalog)
        for catalog in registry.catalogs():
            if catalog.name not in wanted:
                registry.delete(catalog.name)
    return len(registry.index)


def in_process_searcher(registry: Registry, retriever: str, depth: int, limit: int) -> Searcher:
    def search(query: str) -> Answer:
        ranked = registry.search(query, depth, retriever=retriever)
        returned = registry.search(query, limit, retriever=retriever)
        return Answer(
            ranked=tuple(h.entry.id for h in ranked.hits),
            returned=tuple(h.entry.id for h in returned.hits),
            weak=returned.weak_match,
        )

    return search


def remote_searcher(client: RegistryClient, depth: int, limit: int) -> Searcher:
    def search(query: str) -> Answer:
        ranked = client.search(query, limit=depth)
        returned = client.search(query, limit=limit)
        return Answer(
            ranked=tuple(h.id for h in ranked.hits),
            returned=tuple(h.id for h in returned.hits),
            weak=returned.weak_match,
        )

    return search


def evaluate(
    plan: EvalPlan, on_rename: Callable[[CatalogRename], None] | None = None
) -> list[Report]:
    """Runs the evaluation `plan` describes and returns one report per retriever;
    `on_rename` hears of each --catalog file registered under a name other than its stem."""
    if plan.dataset:
        try:
            dataset = load_dataset(plan.dataset, plan.datasets)
        except (ValueError, FileNotFoundError) as exc:
            raise EvalError(str(exc)) from exc
        name, sources, queries = dataset.name, list(dataset.catalogs), list(dataset.queries)
    elif plan.catalogs and plan.queries:
        name = plan.queries.stem
        sources, renames = generic_catalogs(plan.catalogs)
        queries = follow_renames(read_queries(plan.queries), renames)
        if on_rename is not None:
            for rename in renames:
                on_rename(rename)
    else:
        raise EvalError("give --dataset NAME, or --catalog PATH... with --queries FILE.jsonl")
    if plan.max_queries:
        queries = queries[: plan.max_queries]
    if plan.server is not None:
        return [_evaluate_remote(plan, plan.server, name, sources, queries)]
    return _evaluate_in_process(plan, name, sources, queries)


def _evaluate_remote(
    plan: EvalPlan,
    target: RegistryTarget,
    name: str,
    sources: list[CatalogSource],
    queries: list[LabeledQuery],
) -> Report:
    if list(plan.retrievers) != [Retriever.DEFAULT]:
        raise EvalError("--server measures the registry's own retriever: use --retriever default")
    try:
        with RegistryClient(target) as client:
            for source in sources:
                client.register_catalog(source.content, name=source.name, fmt=source.format)
            tools = sum(c.tool_count for c in client.list_catalogs().catalogs)
            search = remote_searcher(client, max(plan.ks), plan.limit)
            return run(
                name, Retriever.DEFAULT, tools, queries, search, ks=plan.ks, progress=plan.progress
            )
    except RegistryCallFailed as exc:
        raise EvalError(f"--server {target.address}: {exc.one_line()}") from exc


def _evaluate_in_process(
    plan: EvalPlan, name: str, sources: list[CatalogSource], queries: list[LabeledQuery]
) -> list[Report]:
    one_thread_per_search()
    family = name.split(":")[0]
    db = plan.db or DEFAULT_WORKDIR / f"{family}.db"
    store = SqliteStore(db)
    retrievers, ks, progress = plan.retrievers, plan.ks, plan.progress
    settings = SearchSettings(
        query_cache_size=max(4_096, 2 * len(queries)),
        approximate_from=INDEX_MODES[plan.index],
        result_cache_size=0,  # every query is asked once per retriever: nothing to reuse
    )
    try:
        embedder = load_embedder(plan.model, plan.embedder, cache_dir=plan.model_cache)
        registry = Registry(store, embedder, settings=settings, progress=progress)
        registry.load()
        tools = load_catalogs(registry, sources)
        if any(r != Retriever.BM25 for r in retrievers):
            registry.queries.warm([q.query for q in queries], progress=progress)
        return [
            run(
                name,
                retriever,
                tools,
                queries,
                in_process_searcher(registry, retriever, max(ks), plan.limit),
                ks=ks,
                progress=progress,
            )
            for retriever in retrievers
        ]
    finally:
        store.close()
