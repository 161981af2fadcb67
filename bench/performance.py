"""Performance: search latency, throughput, the hardware floor, registration, start-up, memory.

Usage: python -m bench.performance [--sizes 1000,10000,100000] [--queries 200] [--out FILE.md]
(`make bench`). Catalogs of each size are drawn from the shared datasets; past the pool's
unique tools, mirror copies (same text, another catalog) fill the size, so their embeddings
are shared. Embeddings persist in .capreg/bench.db: only the first run embeds.
Every search figure is against a real `capreg serve` over gRPC on loopback.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from bench.performance_report import write_report
from bench.stats import percentile, rss_mb
from capreg.evaluation.sampler import PoolTool, catalog_sources, load_pool, with_variants
from indexer.embedding import Embedder, SpanEmbedder, load_embedder
from indexer.retrieval.first_stage import Request
from indexer.retrieval.fusion import clause_spans, split_intents
from indexer.retrieval.pipeline import rank
from indexer.retrieval.tool_index import ToolIndex
from indexer.retrieval.vector_index import VectorIndex, one_thread_per_search
from registry.config import SearchSettings
from registry.core import Registry
from registry.heap import release_free_memory
from registry.proto import registry_pb2 as pb
from registry.proto import registry_pb2_grpc as pb_grpc
from registry.store import SqliteStore
from tests.support.server_process import serving_process

ROOT = Path(__file__).resolve().parent.parent
WORKDIR = ROOT / ".capreg" / "bench"


def pcts(samples: list[float]) -> tuple[float, float, float]:
    return statistics.median(samples), percentile(samples, 0.95), percentile(samples, 0.99)


def timed(call: Callable[[], object], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def throughput(
    address: str,
    queries: list[str],
    clients: int,
    seconds: float,
    *,
    distinct: bool,
    options: Sequence[tuple[str, Any]] = (),
    metadata: Sequence[tuple[str, str | bytes]] = (),
    tag: str = "",
) -> float:
    """Searches per second with `clients` concurrent callers, each on its own channel.

    `tag` keeps "uncached" texts new to servers an earlier call already asked."""
    done = [0] * clients
    stop = time.perf_counter() + seconds

    def worker(index: int) -> None:
        with grpc.insecure_channel(address, options=list(options)) as channel:
            stub = pb_grpc.CapabilityRegistryStub(channel)
            i = index
            while time.perf_counter() < stop:
                query = queries[i % len(queries)]
                # A fresh suffix per call keeps "uncached" uncached; one query is "cached".
                text = f"{query} #{tag}{index}-{i}" if distinct else query
                stub.Search(pb.SearchRequest(query=text), timeout=30, metadata=tuple(metadata))
                done[index] += 1
                i += clients

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(done) / (time.perf_counter() - started)


def build(registry: Registry, tools: list[PoolTool], size: int) -> dict[str, Any]:
    """Registers exactly `tools`; times the cold load, a warm re-registration and a one-tool
    change."""
    sources = catalog_sources(tools)
    names = {name for name, _ in sources}
    started = time.perf_counter()
    embedded = 0
    with registry.bulk():
        for catalog in registry.catalogs():
            if catalog.name not in names:
                registry.delete(catalog.name)
        for name, content in sources:
            embedded += registry.register(content, name=name, fmt="native").embedded
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    with registry.bulk():
        for name, content in sources:
            registry.register(content, name=name, fmt="native")
    warm_s = time.perf_counter() - started
    # One-tool changes to catalogs spread over the id order (the first after a bulk load,
    # then four more): the snapshot is spliced from the previous one each time.
    changes = []
    for position in range(0, len(sources), max(1, len(sources) // 5))[:5]:
        name, content = sources[position]
        document = json.loads(content)
        document["tools"][0]["description"] += f" (revised {time.time_ns()})"
        started = time.perf_counter()
        changed = registry.register(json.dumps(document), name=name, fmt="native")
        changes.append(time.perf_counter() - started)
    return {
        "size": size,
        "load_s": load_s,
        "embedded": embedded,
        "warm_s": warm_s,
        "one_change_s": statistics.median(changes),
        "one_change_first_s": changes[0],
        "one_change_max_s": max(changes),
        "one_change_embedded": changed.embedded,
    }


def cold_rate(embedder: Embedder, tools: list[PoolTool], n: int = 256) -> float:
    """Tools embedded per second from text never seen before (the cold registration rate)."""
    from indexer.retrieval.document import document_text

    texts = [document_text(t.tool, t.title) + f" #{time.time_ns()}" for t in tools[:n]]
    started = time.perf_counter()
    embedder.encode(texts)
    return len(texts) / (time.perf_counter() - started)


def floor_ms(
    embedder: Embedder, registry: Registry, queries: list[str], *, clauses: bool = False
) -> float:
    """Bare query encoding plus a bare vector search at this size, in-process.

    With `clauses`, the request and its clauses are encoded the way the hybrid retriever
    does it (one pass, clauses pooled from it) and all their vectors searched as the retriever
    searches them (`VectorIndex.search_intents`): the same model and vector work, without the
    ranking.
    """
    index = registry.index.vectors
    samples = []
    for query in queries:
        parts = split_intents(query) if clauses else []
        started = time.perf_counter()
        if parts and isinstance(embedder, SpanEmbedder):
            pooled = embedder.encode_spans(query, clause_spans(query, parts))
            vectors = np.vstack([v for v in pooled if v is not None])
        else:
            vectors = embedder.encode([query, *parts])
        index.search_intents(vectors, 10)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def approximation(registry: Registry, queries: list[str]) -> dict[str, Any]:
    """How the IVF path compares with scoring every tool, on these real embeddings.

    recall@10: share of the exact top 10 that the IVF search returns, counted over distinct
    vectors (past the datasets' unique tools the catalogs are mirror copies, and copies of
    one vector would otherwise fill a top 10 alike on both sides). hybrid@10: overlap of the
    default ranking's top 10 on both paths.
    """
    approximate = registry.index
    if not approximate.vectors.approximate:
        return {}
    matrix = approximate.vectors.matrix
    vectors = np.vstack(registry.queries.embed_many(queries))
    unique, inverse = np.unique(matrix, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    _, best = VectorIndex(unique).search(vectors, 10)
    copies = int(np.bincount(inverse).max())
    _, rows = approximate.vectors.search(vectors, min(len(matrix), 10 * copies))
    recall = []
    for found, wanted in zip(rows, best, strict=True):
        distinct = list(dict.fromkeys(inverse[found[found >= 0]].tolist()))[:10]
        recall.append(len(set(distinct) & set(wanted.tolist())) / 10)
    exact = ToolIndex(approximate.segments, approximate.generation, space=approximate.space)
    overlap = []
    for query in queries:
        texts = [query, *split_intents(query)]
        intent_vectors = registry.queries.request_vectors(query, texts[1:])
        request = Request(texts=texts, vectors=intent_vectors)
        ids = [{h.entry.id for h in rank(i, request, 10).hits} for i in (exact, approximate)]
        overlap.append(len(ids[0] & ids[1]) / max(len(ids[0]), 1))
    return {"ivf_recall_10": statistics.mean(recall), "hybrid_overlap_10": statistics.mean(overlap)}


def measure_server(db: Path, size: int, queries: list[str], log: Path) -> dict[str, Any]:
    started = time.perf_counter()
    with serving_process(db, log) as (address, process), grpc.insecure_channel(address) as channel:
        startup_s = time.perf_counter() - started
        stub = pb_grpc.CapabilityRegistryStub(channel)
        stub.Search(pb.SearchRequest(query="warm up"), timeout=60)
        uncached = []
        for query in queries:
            request = pb.SearchRequest(query=query)
            began = time.perf_counter()
            stub.Search(request, timeout=30)
            uncached.append((time.perf_counter() - began) * 1000)
        repeated = queries[0]
        stub.Search(pb.SearchRequest(query=repeated), timeout=30)
        cached = timed(lambda: stub.Search(pb.SearchRequest(query=repeated), timeout=30), 200)
        rates = {}
        for clients in (1, 8, 32):
            rates[f"uncached_{clients}"] = throughput(address, queries, clients, 5.0, distinct=True)
            rates[f"cached_{clients}"] = throughput(
                address, [repeated], clients, 5.0, distinct=False
            )
        memory = rss_mb(process.pid)
    return {
        "size": size,
        "startup_s": startup_s,
        "uncached": pcts(uncached),
        "cached": pcts(cached),
        "rss_mb": memory,
        **rates,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "performance.md")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    WORKDIR.mkdir(parents=True, exist_ok=True)
    db = WORKDIR / "bench.db"
    pool, tasks = load_pool(args.datasets)
    rng = random.Random(11)
    queries = [t.query[:500] for t in rng.sample(tasks, args.queries)]
    one_thread_per_search()
    embedder = load_embedder()
    rows = []
    for size in sizes:
        tools = with_variants(pool, size)[:size]
        store = SqliteStore(db)
        registry = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
        registry.load()
        built = build(registry, tools, size)
        floor = floor_ms(embedder, registry, queries)
        floor_intents = floor_ms(embedder, registry, queries, clauses=True)
        compared = approximation(registry, queries)
        rate = cold_rate(embedder, tools)
        store.close()
        # The server gets the machine's memory to itself (at a million tools each copy of
        # the registry is gigabytes).
        del registry, tools
        gc.collect()
        release_free_memory()
        served = measure_server(db, size, queries, WORKDIR / f"serve-{size}.log")
        row = {
            **built,
            **served,
            **compared,
            "floor_ms": floor,
            "floor_intents_ms": floor_intents,
            "cold_tools_per_s": rate,
        }
        print(row)
        rows.append(row)
    write_report(rows, args)


if __name__ == "__main__":
    main()
