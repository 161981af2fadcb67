"""How long a full garbage collection holds the GIL in a loaded server, before and after
`settle_long_lived_objects` freezes what loading made.

A serving process is built the way `capreg serve` builds it (the model, the registry, the
sample catalogs registered), then every generation is collected `--rounds` times and timed,
before and after freezing. A collection holds the GIL throughout, so its length is how long a
cache hit on the event loop can wait behind it.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.stats import percentile
from indexer.embedding import load_embedder
from registry.core import Registry
from registry.ingest.catalog_dir import sync_folder
from registry.rpc.server import settle_long_lived_objects
from registry.store import SqliteStore

ROOT = Path(__file__).resolve().parent.parent


def full_collections(rounds: int) -> list[float]:
    """Milliseconds per full collection, `rounds` times."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        gc.collect()
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--catalogs", type=Path, default=ROOT / "catalogs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        store = SqliteStore(Path(work) / "registry.db")
        registry = Registry(store, load_embedder())
        registry.load()
        sync_folder(registry, args.catalogs)
        tracked_before = len(gc.get_objects())
        before = full_collections(args.rounds)
        settle_long_lived_objects()
        tracked_after = len(gc.get_objects())
        after = full_collections(args.rounds)
        gc.unfreeze()
        tools = len(registry.index)
        store.close()

    def row(name: str, tracked: int, times: list[float]) -> str:
        return f"| {name} | {tracked:,} | {percentile(times, 0.5):.1f} | {max(times):.1f} |"

    lines = [
        "# Full garbage collections in a loaded server",
        "",
        f"Command: `python -m bench.gc_pauses --rounds {args.rounds}"
        + (f" --out {args.out}" if args.out else "")
        + f"` ({datetime.now(UTC):%Y-%m-%d})",
        "",
        f"One process built as `capreg serve` builds it: the ONNX model and {tools} tools of "
        f"{args.catalogs.name}/ registered. Each full collection (`gc.collect()`) holds the GIL "
        "throughout; timed "
        f"{args.rounds} times before and after `settle_long_lived_objects` "
        "(`gc.collect()` then `gc.freeze()`, registry/rpc/server.py).",
        "",
        "| | objects the collector walks | full collection p50 ms | longest ms |",
        "| --- | --- | --- | --- |",
        row("as loaded", tracked_before, before),
        row("after freezing", tracked_after, after),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
