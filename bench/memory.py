"""Memory per tool: what a registry restarted over a stored corpus holds, by the module that
allocated it, and the process' resident size.

Usage: python -m bench.memory [--sizes 10000,100000] [--out docs/results/memory.md]

Each size is the bench corpus of `bench.performance` (the shared datasets' tools, mirror
copies past the unique ones), registered into .capreg/bench/memory-<size>.db with the
embeddings stored; then a fresh registry loads that store under tracemalloc (the Python heap
and NumPy arrays; FAISS' own lists are reported from their size, tracemalloc cannot see
them). The per-tool figure is what one more tool costs: the difference between the size and
a tenth of it, so fixed costs (the model, the smallest arrays) drop out.
"""

from __future__ import annotations

import argparse
import gc
import os
import sqlite3
import time
import tracemalloc
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.performance import WORKDIR, build
from bench.stats import rss_mb
from capreg.evaluation.sampler import load_pool, with_variants
from indexer.embedding import Embedder, load_embedder
from registry.config import SearchSettings
from registry.core import Registry
from registry.heap import release_free_memory
from registry.store import SqliteStore

ROOT = Path(__file__).resolve().parent.parent


def stored(size: int, embedder: Embedder, datasets: str | None) -> Path:
    """A store holding the bench corpus of `size` tools (made once; starting from a copy of
    bench.performance's store when there is one, whose embeddings it reuses)."""
    db = WORKDIR / f"memory-{size}.db"
    if db.exists():
        return db
    shared = WORKDIR / "bench.db"
    if shared.exists():
        with sqlite3.connect(shared) as source, sqlite3.connect(db) as target:
            source.backup(target)
    pool, _ = load_pool(datasets)
    store = SqliteStore(db)
    registry = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
    registry.load()
    build(registry, with_variants(pool, size)[:size], size)
    store.close()
    return db


@dataclass(frozen=True)
class Held:
    """What a registry restarted over a store holds."""

    tools: int
    modules: Counter[str]  # bytes by the module that allocated them
    ivf_bytes: int
    rss_mb: float  # the process' growth over the load
    load_s: float


def measure(db: Path, embedder: Embedder) -> Held:
    """A registry restarted over `db`: bytes held by allocating module, IVF list bytes,
    resident growth, and the load time."""
    gc.collect()
    release_free_memory()
    before = rss_mb(os.getpid())
    tracemalloc.start()
    started = time.perf_counter()
    store = SqliteStore(db)
    registry = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
    registry.load()
    load_s = time.perf_counter() - started
    gc.collect()
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    by_module: Counter[str] = Counter()
    for stat in snapshot.statistics("filename"):
        name = stat.traceback[0].filename
        by_module[_module(name)] += stat.size
    release_free_memory()
    after = rss_mb(os.getpid())
    ivf = registry.index.vectors.list_bytes()
    tools = len(registry.index)
    store.close()
    del registry
    return Held(tools, by_module, ivf, after - before, load_s)


def _module(filename: str) -> str:
    """The project module, the installed package, or the file that allocated."""
    path = Path(filename)
    if "site-packages" in path.parts:
        return path.parts[path.parts.index("site-packages") + 1]
    try:
        return ".".join(path.relative_to(ROOT).with_suffix("").parts)
    except ValueError:
        return path.name


def report(rows: list[tuple[int, Held, Held]], command: str) -> str:
    lines = [
        "# Memory per tool",
        "",
        f"Command: `{command}`  ",
        f"Date: {datetime.now(UTC).date()}. A registry restarted over a stored corpus (bench "
        "corpus: the shared datasets' tools, mirror copies past the unique ones). Bytes per "
        "tool = (held at the size - held at a tenth of it) / the tools between: what one more "
        "tool costs. Python heap and NumPy arrays by allocating module (tracemalloc); FAISS "
        "lists from their size; resident = the process' growth over the load (after "
        "returning freed pages), the same difference: one process loads both stores, so it "
        "follows the allocator's state and moves from run to run (9.1 and 11.9 KB at 100,000 "
        "tools in two runs whose counted bytes differed by 55); `make bench`'s RSS column "
        "is the serving process'.",
        "",
    ]
    for size, small, large in rows:
        added = large.tools - small.tools
        per_module = {
            name: (held - small.modules.get(name, 0)) / added
            for name, held in large.modules.items()
        }
        ivf = (large.ivf_bytes - small.ivf_bytes) / added
        traced = sum(per_module.values())
        rss = (large.rss_mb - small.rss_mb) * 2**20 / added
        lines += [
            f"## {size:,} tools",
            "",
            f"Load {large.load_s:.1f} s. Per tool: {traced + ivf:,.0f} bytes counted "
            f"({traced:,.0f} traced + {ivf:,.0f} IVF lists), {rss:,.0f} bytes resident.",
            "",
            "| allocated by | bytes per tool |",
            "| --- | --- |",
            *(
                f"| {name} | {value:,.0f} |"
                for name, value in sorted(per_module.items(), key=lambda kv: -kv[1])
                if value >= 20
            ),
            f"| faiss (IVF lists, 8-bit codes) | {ivf:,.0f} |",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "memory.md")
    args = parser.parse_args()
    WORKDIR.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder()
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        small = measure(stored(size // 10, embedder, args.datasets), embedder)
        large = measure(stored(size, embedder, args.datasets), embedder)
        print(size, large.tools, "tools", f"{large.load_s:.1f} s", f"{large.rss_mb:.0f} MiB")
        rows.append((size, small, large))
    command = f"python -m bench.memory --sizes {args.sizes}"
    args.out.write_text(report(rows, command) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
