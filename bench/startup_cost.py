"""The cost of a start-up over a store, comparable across versions of the code.

Usage: python bench/startup_cost.py --db STORE|DSN [--traced] [--profile N]

Opens a registry over a store that already holds its catalogs (`make bench` leaves one in
.capreg/bench/) and times the imports and `Registry.load()` in this process. It uses only the
API older versions share, so the same file measures an older commit on the same machine, back
to back (this machine's speed moves from day to day; compare runs made together):

    git worktree add /tmp/old 2bebb6e
    PYTHONPATH=/tmp/old python bench/startup_cost.py --db .capreg/bench/memory-100000.db
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402 -- imports are part of what is timed
import cProfile  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import pstats  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

from indexer.embedding import load_embedder  # noqa: E402
from indexer.retrieval.vector_index import one_thread_per_search  # noqa: E402
from registry.config import SearchSettings  # noqa: E402
from registry.core import Registry  # noqa: E402
from registry.store import open_store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--db", required=True, help="a SQLite store file, or a PostgreSQL DSN (a replica)"
    )
    parser.add_argument(
        "--traced",
        action="store_true",
        help="also the Python heap and NumPy arrays the registry holds after the load "
        "(tracemalloc, started after the model loads: the load is slower under it)",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also profile the load (cProfile: slower under it) and print the N functions "
        "with the most time in them, callees included",
    )
    args = parser.parse_args()
    one_thread_per_search()
    imported = time.perf_counter()
    embedder = load_embedder()
    if args.traced:
        tracemalloc.start()
    store = open_store(args.db)
    registry = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
    profile = cProfile.Profile() if args.profile else None
    if profile is not None:
        profile.enable()
    registry.load()
    loaded = time.perf_counter()
    if profile is not None:
        profile.disable()
    figures = {
        "tools": len(registry.index),
        "imports_s": round(imported - STARTED, 2),
        "load_s": round(loaded - imported, 2),
        "total_s": round(loaded - STARTED, 2),
    }
    if args.traced:
        registry.index.named("settle")  # the name lookup is filed off the load's thread
        gc.collect()
        figures["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 1e6, 1)
        tracemalloc.stop()
    store.close()
    print(json.dumps(figures))
    if profile is not None:
        print_profile(profile, args.profile)


def print_profile(profile: cProfile.Profile, count: int) -> None:
    """The `count` functions with the most cumulative time, as a table: seconds with their
    callees, seconds of their own, calls."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda item: item[1][3], reverse=True)[:count]
    print("| function | cumulative s | own s | calls |")
    print("| --- | --- | --- | --- |")
    for (path, line, name), (_, calls, own, cumulative, _) in rows:
        where = f"{Path(path).name}:{line}({name})" if line else name
        print(f"| {where} | {cumulative:.3f} | {own:.3f} | {calls:,} |")


if __name__ == "__main__":
    main()
