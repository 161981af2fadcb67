"""What a restart spends on each vector's IVF list: computed, or read from the store.

Usage: python -m bench.ivf_lists [--sizes 100000,1000000] [--out docs/results/ivf-lists.md]

Every vector of an IVF index is filed under its nearest list centroid. The bench corpora of
`make bench` are mirror copies of 7,279 distinct tools, whose copies share a document and its
list, so their start-ups compute about 7,279 lists whatever their size; a registry of N
distinct tools computes N (decision 0088). For each size this times, on N distinct random unit
vectors under `list_count(N)` random unit centroids (the cost of a nearest-centroid search does
not depend on where the centroids lie), in one process:

- computed: `Partition.assign` of every key on a fresh partition, in the parts of
  `VectorIndex._add`, as a restart did before the lists were stored;
- stored: `put_ivf_lists` of them all into a new SQLite store (once, when they are first
  computed), then a fresh partition's `remember(store.ivf_lists(...))`, as a restart does now.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

from indexer.retrieval.ivf import Partition, list_count
from indexer.retrieval.vector_index import one_thread_per_search
from registry.store import SqliteStore

DIMENSION = 384
PART = 65_536  # as `VectorIndex._add`
MODEL = "bench-model"


def unit_rows(rng: np.random.Generator, rows: int) -> np.ndarray:
    matrix = rng.standard_normal((rows, DIMENSION), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def measure(size: int, workdir: Path) -> dict[str, float]:
    rng = np.random.default_rng(size)
    centroids = unit_rows(rng, list_count(size))
    vectors = unit_rows(rng, size)
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(size)]
    computing = Partition(centroids, size)
    started = time.perf_counter()
    for start in range(0, size, PART):
        computing.assign(keys[start : start + PART], vectors[start : start + PART])
    computed_s = time.perf_counter() - started
    lists = computing.take_unsaved()
    store = SqliteStore(workdir / f"lists-{size}.db")
    started = time.perf_counter()
    store.put_ivf_lists(MODEL, computing.digest, lists)
    written_s = time.perf_counter() - started
    reading = Partition(centroids, size)
    started = time.perf_counter()
    read = reading.remember(store.ivf_lists(MODEL, reading.digest))
    read_s = time.perf_counter() - started
    store.close()
    assert read == size
    return {
        "lists": len(centroids),
        "computed_s": computed_s,
        "written_s": written_s,
        "read_s": read_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--out", type=Path, default=Path("docs/results/ivf-lists.md"))
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    one_thread_per_search()  # as `capreg serve`: the assignment itself uses every core
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for size in sizes:
            figures = measure(size, Path(workdir))
            print(size, figures, flush=True)
            rows.append(
                f"| {size:,} | {figures['lists']:,} | {figures['computed_s']:.2f} "
                f"| {figures['read_s']:.2f} | {figures['written_s']:.2f} |"
            )
    args.out.write_text(
        "# Each vector's IVF list at a restart: computed, or read from the store\n\n"
        f"Command: `python -m bench.ivf_lists --sizes {args.sizes} --out {args.out}`  \n"
        f"Date: {date.today().isoformat()}; {platform.machine()}, "
        f"{platform.python_implementation()} {platform.python_version()}; distinct random "
        "unit vectors of 384 dimensions (see the module's docstring).\n\n"
        "| distinct vectors | lists | computed s (before) | read from the store s (now) "
        "| written once s |\n"
        "| --- | --- | --- | --- | --- |\n" + "\n".join(rows) + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
