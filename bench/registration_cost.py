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

With `--distinct` every mirror copy's description starts "(copy N) ", so each tool is its
own document, as in a registry of distinct servers (a mirror's copies share a document, its
vector and its IVF list). Their vectors are not the model's: each is the original's stored
vector plus seeded noise (`NOISE`), renormalised, stored under the model's id, so the store
loads with the real model and its geometry stays that of the pool's clusters.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from capreg.evaluation.sampler import PoolTool, catalog_sources, load_pool, with_variants
from indexer.embedding import Embedder, load_embedder
from indexer.retrieval.document import document_hash
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


# How far a distinct copy's vector lies from its original's (per component, before
# renormalising): a cosine of about 0.86 between the two.
NOISE = 0.03
_COPY = re.compile(r"\(copy \d+\) ")


def distinct(tools: list[PoolTool]) -> list[PoolTool]:
    """Each mirror copy with a description of its own ("(copy N) " first)."""
    made = []
    for item in tools:
        if item.origin and item.origin != item.tool.id:
            copy = item.tool.catalog.rsplit("-m", 1)[-1]
            described = f"(copy {copy}) {item.tool.description}"
            item = replace(item, tool=replace(item.tool, description=described))
        made.append(item)
    return made


class DerivedVectors:
    """An embedder under the model's id whose vector of a copy's document is the original
    document's stored vector plus seeded noise (see the module)."""

    def __init__(self, model: Embedder, store: Path) -> None:
        self._model = model
        with sqlite3.connect(store) as db:
            rows = db.execute(
                "SELECT doc_hash, vector FROM embeddings WHERE model=?", (model.model_id,)
            ).fetchall()
        self._stored = {key: np.frombuffer(blob, dtype=np.float32) for key, blob in rows}

    @property
    def model_id(self) -> str:
        return self._model.model_id

    @property
    def dimension(self) -> int:
        return self._model.dimension

    def encode(self, texts: Sequence[str], *, progress: bool = False) -> NDArray[np.float32]:
        del progress  # no model runs: nothing to report
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            noise = np.random.default_rng(seed).standard_normal(self.dimension)
            base = self._stored.get(document_hash(_COPY.sub("", text, count=1)))
            vector = noise if base is None else base + NOISE * noise
            rows.append(vector / np.linalg.norm(vector))
        return np.asarray(rows, dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tools", type=int, required=True)
    parser.add_argument("--embeddings", type=Path, required=True)
    parser.add_argument("--keep", type=Path, default=None, help="a new store file to keep")
    parser.add_argument("--datasets", default=None)
    parser.add_argument(
        "--distinct", action="store_true", help="each copy its own document (see the module)"
    )
    args = parser.parse_args()
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: the file exists; name a new one")
    pool, _ = load_pool(args.datasets)
    chosen = with_variants(pool, args.tools)[: args.tools]
    sources = catalog_sources(distinct(chosen) if args.distinct else chosen)
    one_thread_per_search()
    embedder: Embedder = load_embedder()
    if args.distinct:
        embedder = DerivedVectors(embedder, args.embeddings)
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
