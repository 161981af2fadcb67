"""What the learned ranking stage adds to a search: the ranking with and without it, on the
same snapshot, the same request vectors and the same requests, interleaved request by request
(so the machine's drift affects both alike).

Usage: python -m bench.learned_cost [--size 10000] [--queries 200] [--rounds 3] [--out FILE.md]
The catalogs are those of bench.performance at that size (embeddings from .capreg/bench).
The encode, identical with and without the stage, is left out: the difference is the cost.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.performance import WORKDIR, build
from bench.stats import percentile
from capreg.evaluation.sampler import load_pool, with_variants
from indexer.embedding import load_embedder
from indexer.retrieval.first_stage import Request
from indexer.retrieval.fusion import split_intents
from indexer.retrieval.learned import load_learned_stage
from indexer.retrieval.pipeline import rank
from indexer.retrieval.vector_index import one_thread_per_search
from registry.config import SearchSettings
from registry.core import Registry
from registry.store import SqliteStore

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "learned-cost.md")
    args = parser.parse_args()
    stage = load_learned_stage()
    if stage is None:
        raise SystemExit("no learned stage installed: nothing to measure")
    pool, tasks = load_pool(args.datasets)
    rng = random.Random(11)
    queries = [t.query[:500] for t in rng.sample(tasks, args.queries)]
    one_thread_per_search()
    embedder = load_embedder()
    WORKDIR.mkdir(parents=True, exist_ok=True)
    store = SqliteStore(WORKDIR / "bench.db")
    try:
        registry = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
        registry.load()
        build(registry, with_variants(pool, args.size)[: args.size], args.size)
        index = registry.index
        requests = []
        for query in queries:
            texts = [query, *split_intents(query)]
            requests.append((texts, registry.queries.request_vectors(query, texts[1:])))
        blend: list[float] = []
        learned: list[float] = []
        added: list[float] = []
        for _ in range(args.rounds):
            for texts, vectors in requests:
                started = time.perf_counter()
                rank(index, Request(texts=texts, vectors=vectors), 5)
                middle = time.perf_counter()
                # Serving maps the request's vectors by the stage's adapter first.
                mapped = stage.adapter.apply(vectors) if stage.adapter is not None else vectors
                rank(index, Request(texts=texts, vectors=mapped), 5, learned=stage)
                ended = time.perf_counter()
                blend.append((middle - started) * 1000)
                learned.append((ended - middle) * 1000)
                added.append(learned[-1] - blend[-1])
    finally:
        store.close()
    rows = [
        ("fixed blend only (hybrid-blend)", blend),
        ("blend + learned stage with its query adapter (default)", learned),
        ("added by the learned stage, per request", added),
    ]
    lines = [
        "# What the learned stage costs per search",
        "",
        f"Command: `python -m bench.learned_cost --size {args.size} --queries {args.queries} "
        f"--rounds {args.rounds}`  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d}; {len(index):,} tools "
        f"({'IVF' if index.vectors.approximate else 'exact'}), {len(queries)} labeled task texts "
        f"cut at 500 characters, each ranked {args.rounds} times with and without the stage, "
        "interleaved, in one process on one thread; the request's encode (the same either way) "
        "is not included.",
        "",
        "| ranking | p50 ms | p95 ms | p99 ms |",
        "| --- | --- | --- | --- |",
    ]
    for label, samples in rows:
        lines.append(
            f"| {label} | {statistics.median(samples):.2f} | {percentile(samples, 0.95):.2f} | "
            f"{percentile(samples, 0.99):.2f} |"
        )
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
