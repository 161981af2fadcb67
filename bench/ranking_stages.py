"""Where an uncached search's time goes past the floor, stage by stage, at each index size.

Usage: python -m bench.ranking_stages --db STORE [--db STORE ...] [--queries 200] [--out FILE.md]

Each STORE is a registry's store that already holds its catalogs (`python -m bench.memory`
leaves .capreg/bench/memory-10000.db and memory-100000.db; `make bench-1m` leaves the
million-tool one). The registry is restarted over it in this process, and the same labeled
task texts as bench.performance (cut at 500 characters) are searched once each with the
default retriever, no result cache, so every request is encoded: each stage below is timed
inside those same searches (the stages' functions wrapped with a timer), so the rows of one
size add up within one set of requests. Indented rows are part of the row above them. The
floor is bench.performance's: the bare encode and a bare vector search of 10, measured in the
same process on the same texts, interleaved with the searches request by request.
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.performance import floor_ms
from capreg.evaluation.sampler import load_pool
from indexer.embedding import load_embedder
from indexer.retrieval import first_stage, pipeline, retrievers
from indexer.retrieval.adapter import QueryAdapter
from indexer.retrieval.array_bm25 import ArrayBM25
from indexer.retrieval.tool_index import ToolIndex
from indexer.retrieval.vector_index import VectorIndex, one_thread_per_search
from registry.config import SearchSettings
from registry.core import Registry
from registry.queries import QueryEncoder
from registry.store import SqliteStore

ROOT = Path(__file__).resolve().parent.parent

CANDIDATES = "candidates (IVF probes, BM25 bests, catalog expansion)"
COUNT = "candidate rows"
# (label, depth, owner, attribute): what is wrapped, in the order the report lists it.
STAGES: list[tuple[str, int, Any, str]] = [
    ("encode the request and its clauses (one model pass)", 0, QueryEncoder, "request_vectors"),
    ("query adapter", 0, QueryAdapter, "apply"),
    ("eligible rows (the caller's view)", 0, ToolIndex, "eligible"),
    ("rank (everything past the encode)", 0, retrievers, "rank"),
    ("first stage", 1, pipeline, "first_stage"),
    ("names the request spells (literal lookup)", 2, ToolIndex, "named"),
    ("BM25 over every row, per text", 2, ArrayBM25, "scores"),
    (CANDIDATES, 2, first_stage, "_candidates"),
    ("IVF search of every intent", 3, VectorIndex, "search"),
    ("dense scores of the candidates", 2, VectorIndex, "scores_at"),
    ("dense score spread per intent", 2, VectorIndex, "score_spread"),
    ("catalog scores", 2, first_stage, "_catalog_scores"),
    ("blend over the intents", 2, first_stage, "rank_intents"),
    ("learned stage: shortlist and features", 1, pipeline, "learned_inputs"),
    ("learned stage: model and weak match", 1, pipeline, "rerank_learned"),
    ("cut (confident set)", 1, pipeline, "cut"),
    ("hits", 1, pipeline, "hits"),
]


class Timers:
    """Seconds spent in each wrapped function during the current request."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.requests: list[dict[str, float]] = []

    def wrap(self, label: str, function: Callable[..., Any]) -> Callable[..., Any]:
        current = self

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                result = function(*args, **kwargs)
            finally:
                current.current[label] += time.perf_counter() - started
            if label == CANDIDATES:  # the rows the first stage scores
                current.current[COUNT] += len(result)
            return result

        return timed

    @contextmanager
    def request(self) -> Iterator[None]:
        self.current = defaultdict(float)
        started = time.perf_counter()
        yield
        self.current["search"] = time.perf_counter() - started
        self.requests.append(dict(self.current))


@contextmanager
def wrapped(timers: Timers) -> Iterator[None]:
    saved = [(owner, name, owner.__dict__[name]) for _, _, owner, name in STAGES]
    try:
        for label, _, owner, name in STAGES:
            setattr(owner, name, timers.wrap(label, getattr(owner, name)))
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def measure(db: Path, queries: list[str]) -> tuple[int, list[dict[str, float]], float, float]:
    """(tools, each request's seconds per stage, floor ms, floor with clauses ms)."""
    embedder = load_embedder()
    store = SqliteStore(db)
    try:
        registry = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
        registry.load()
        tools = len(registry.index)
        for query in queries[:10]:  # first-read work (the name lookup, facts) out of the way
            registry.search(f"{query} warm-up", 5)
        timers = Timers()
        floors: list[float] = []
        floors_clauses: list[float] = []
        for query in queries:
            # Interleaved, request by request: the machine's drift moves all three alike.
            floors.append(floor_ms(embedder, registry, [query]))
            floors_clauses.append(floor_ms(embedder, registry, [query], clauses=True))
            with wrapped(timers), timers.request():
                registry.search(query, 5)
    finally:
        store.close()
    return tools, timers.requests, statistics.median(floors), statistics.median(floors_clauses)


def table(tools: int, requests: list[dict[str, float]], floor: float, clauses: float) -> list[str]:
    search = [r["search"] * 1000 for r in requests]
    mean_search = statistics.fmean(search)
    lines = [
        f"### {tools:,} tools",
        "",
        f"Floor {floor:.2f} ms, with clauses {clauses:.2f} ms; this run's search p50 "
        f"{statistics.median(search):.2f} ms ({statistics.median(search) / floor:.2f}x the "
        f"floor, {statistics.median(search) / clauses:.2f}x with clauses).",
        "",
        "| stage | p50 ms | mean ms | share of the mean search |",
        "| --- | --- | --- | --- |",
        f"| the whole search, in process | {statistics.median(search):.2f} | "
        f"{mean_search:.2f} | 100% |",
    ]
    for label, depth, _, _ in STAGES:
        samples = [r.get(label, 0.0) * 1000 for r in requests]
        mean = statistics.fmean(samples)
        indent = "&nbsp;" * 4 * depth
        lines.append(
            f"| {indent}{label} | {statistics.median(samples):.2f} | {mean:.2f} | "
            f"{100 * mean / mean_search:.1f}% |"
        )
    counts = sorted(r.get(COUNT, 0.0) for r in requests)
    lines += [
        "",
        f"Candidate rows a request's first stage scores: median {statistics.median(counts):,.0f}, "
        f"mean {statistics.fmean(counts):,.0f}, 90th percentile "
        f"{counts[int(0.9 * (len(counts) - 1))]:,.0f}, most {counts[-1]:,.0f}.",
    ]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, action="append", required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "ranking-stages.md")
    args = parser.parse_args()
    _pool, tasks = load_pool(args.datasets)
    rng = random.Random(11)
    queries = [t.query[:500] for t in rng.sample(tasks, args.queries)]
    one_thread_per_search()
    stores = " ".join(f"--db {db}" for db in args.db)
    lines = [
        "# Where an uncached search's time goes, stage by stage",
        "",
        f"Command: `python -m bench.ranking_stages {stores} --queries {args.queries}`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}; {len(queries)} labeled task texts cut at 500 "
        "characters, each searched once (default retriever, limit 5, no result cache) in one "
        "process on one thread; indented stages are part of the stage above them.",
        "",
    ]
    for db in args.db:
        tools, requests, floor, clauses = measure(db, queries)
        lines += table(tools, requests, floor, clauses)
        print("\n".join(lines[-len(STAGES) - 8 :]), flush=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
