"""The cost of registering a bench corpus into an empty store, comparable across versions.

Usage: python bench/registration_cost.py --tools N --embeddings STORE [--keep DB] [--datasets DIR]

Registers bench.performance's corpus of N tools (the labeled pool, mirror copies past its
unique tools) into a new, empty store, in one bulk block in this process, with every vector
already stored: the embeddings table of STORE (a store `python -m bench.memory` leaves in
.capreg/bench/) is copied in first, so nothing is embedded and the figure is registration
alone (parsing, linting, diffing, the store's writes, the snapshot). It uses only the API
older versions share, so the same file measures an older commit on the same machine, back to
back. With `--keep DB` the store is written there (a new file) and kept, for
`bench/startup_cost.py --db DB`:

    git worktree add /tmp/old 2634225
    PYTHONPATH=/tmp/old python bench/registration_cost.py --tools 100000 \\
        --embeddings .capreg/bench/memory-100000.db
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import time
from pathlib import Path

from capreg.evaluation.sampler import catalog_sources, load_pool, with_variants
from indexer.embedding import load_embedder
from indexer.retrieval.vector_index import one_thread_per_search
from registry.config import SearchSettings
from registry.core import Registry
from registry.store import SqliteStore


def copy_embeddings(source: Path, target: Path) -> int:
    """Copies every stored vector of `source` into the store at `target` (as
    `bench.registration.seeded_store` does; not imported, so this file runs against an older
    commit's `bench`)."""
    with sqlite3.connect(target) as db:
        db.execute("ATTACH DATABASE ? AS source", (str(source),))
        copied = db.execute("INSERT OR IGNORE INTO embeddings SELECT * FROM source.embeddings")
        db.commit()
        db.execute("DETACH DATABASE source")
        return copied.rowcount


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, required=True)
    parser.add_argument("--embeddings", type=Path, required=True)
    parser.add_argument("--keep", type=Path, default=None, help="a new store file to keep")
    parser.add_argument("--datasets", default=None)
    args = parser.parse_args()
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: the file exists; name a new one")
    pool, _ = load_pool(args.datasets)
    sources = catalog_sources(with_variants(pool, args.tools)[: args.tools])
    one_thread_per_search()
    embedder = load_embedder()
    with tempfile.TemporaryDirectory() as folder:
        path = args.keep if args.keep is not None else Path(folder) / "registration.db"
        store = SqliteStore(path)
        registry = Registry(store, embedder, settings=SearchSettings(result_cache_size=0))
        registry.load()
        vectors = copy_embeddings(args.embeddings, path)
        started = time.perf_counter()
        embedded = 0
        with registry.bulk():
            for name, content in sources:
                embedded += registry.register(content, name=name, fmt="native").embedded
        seconds = time.perf_counter() - started
        tools = len(registry.index)
        store.close()
    print(
        json.dumps(
            {
                "tools": tools,
                "catalogs": len(sources),
                "vectors_stored_before": vectors,
                "embedded": embedded,
                "register_s": round(seconds, 2),
                "tools_per_s": round(tools / seconds),
            }
        )
    )


if __name__ == "__main__":
    main()
