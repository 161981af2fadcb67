"""The cost of a catalog change at scale, comparable across versions of the code.

Usage: python bench/change_cost.py --db STORE --datasets DIR [--size 100000] [--changes 5]
       [--profile N]

Loads a store that already holds the catalogs of `bench.performance` at `--size` (run `make
bench` first), then times `--changes` one-tool changes, each to another catalog. It uses only
the API older versions share (Registry, Store, load_embedder and the bench's catalog pool), so
the same file measures an older commit on the same machine:

    git worktree add /tmp/old c0ac454
    cp .capreg/bench/bench.db /tmp/old.db   # then make it that commit's schema version
    PYTHONPATH=/tmp/old python bench/change_cost.py --db /tmp/old.db --datasets ../shared/datasets

docs/results/change-cost.md has both runs and the commands.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import statistics
import time
from pathlib import Path

from bench.startup_cost import print_profile
from capreg.evaluation.sampler import catalog_sources, load_pool, with_variants
from indexer.embedding import load_embedder
from indexer.retrieval.vector_index import one_thread_per_search
from registry.config import SearchSettings
from registry.core import Registry

try:
    from registry.store import SqliteStore as Store
except ImportError:  # the commits before the PostgreSQL store named the SQLite one Store
    from registry.store import Store  # type: ignore[assignment]  # an older commit's class


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--datasets", required=True)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=5)
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also profile the changes after the first two (cProfile: slower under it) and "
        "print the N functions with the most time in them, callees included",
    )
    args = parser.parse_args()
    pool, _ = load_pool(args.datasets)
    sources = catalog_sources(with_variants(pool, args.size)[: args.size])
    one_thread_per_search()
    store = Store(args.db)
    registry = Registry(store, load_embedder(), settings=SearchSettings(result_cache_size=0))
    started = time.perf_counter()
    registry.load()
    load_s = time.perf_counter() - started
    changes: list[float] = []
    profile = cProfile.Profile() if args.profile else None
    step = max(1, len(sources) // args.changes)
    for position in range(0, step * args.changes, step):
        name, content = sources[position]
        document = json.loads(content)
        document["tools"][0]["description"] += f" (revised {time.time_ns()})"
        profiled = profile if profile is not None and len(changes) >= 2 else None
        if profiled is not None:
            profiled.enable()
        started = time.perf_counter()
        registry.register(json.dumps(document), name=name, fmt="native")
        changes.append(time.perf_counter() - started)
        if profiled is not None:
            profiled.disable()
    store.close()
    print(
        json.dumps(
            {
                "tools": len(registry.index),
                "catalogs": len(sources),
                "load_s": round(load_s, 2),
                "one_tool_changes_s": [round(c, 3) for c in changes],
                "median_s": round(statistics.median(changes), 3),
            }
        )
    )
    if profile is not None:
        print_profile(profile, args.profile)


if __name__ == "__main__":
    main()
