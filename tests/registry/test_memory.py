"""What a loaded registry holds per tool: the figure docs/performance.md states, held here.

tracemalloc counts the Python heap and NumPy arrays a restart leaves behind; the cost of one
more tool is the difference between two stores, so fixed costs (the model, the smallest
vector arena) drop out."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import yaml

from registry.core import Registry
from registry.store import SqliteStore
from tests.conftest import DATA, CountingEmbedder

MINI = yaml.safe_load((DATA / "mini.yaml").read_text())
TOOLS_PER_CATALOG = 30
# Measured: 3.5 KB a tool for these tools (schemas of two or three parameters left in the
# store, decision 0081; 3.9 KB held as their stored JSON, 5.7 KB when every schema was parsed
# at load, 7.9 KB before the writer stopped keeping a copy of each vector and document text),
# 3 KB of it the vector twice: in the arena and gathered for exact search (below 5,000
# tools). The bound leaves room for allocator noise, not for another copy of each vector
# (1.5 KB) or every schema parsed again (1.8 KB).
BYTES_PER_TOOL = 4_500


def catalog(i: int) -> str:
    """Catalog `c<i>`: the mini catalog's tools, renamed and reworded to 30 distinct tools."""
    tools = [
        {**tool, "name": f"{tool['name']}_{n}", "description": f"{tool['description']} #{i}.{n}"}
        for n in range(TOOLS_PER_CATALOG // len(MINI["tools"]))
        for tool in MINI["tools"]
    ]
    return yaml.safe_dump({**MINI, "name": f"c{i}", "title": f"Mini {i}", "tools": tools})


def held_after_restart(folder: Path, catalogs: int, embedder: CountingEmbedder) -> tuple[int, int]:
    """(bytes held, tools) by a registry restarted over a store of `catalogs` catalogs."""
    db = folder / f"{catalogs}.db"
    store = SqliteStore(db)
    registry = Registry(store, embedder)
    registry.load()
    with registry.bulk():
        for i in range(catalogs):
            registry.register(catalog(i), name=f"c{i}")
    store.close()
    del registry
    gc.collect()
    tracemalloc.start()
    try:
        restarted_store = SqliteStore(db)
        restarted = Registry(restarted_store, embedder)
        restarted.load()
        gc.collect()
        held, _peak = tracemalloc.get_traced_memory()
        tools = len(restarted.index)
        restarted_store.close()
    finally:
        tracemalloc.stop()
    return held, tools


def test_one_more_tool_costs_a_restarted_registry_a_few_kilobytes(
    tmp_path: Path, embedder: CountingEmbedder
) -> None:
    small, small_tools = held_after_restart(tmp_path, 10, embedder)
    large, large_tools = held_after_restart(tmp_path, 30, embedder)
    assert (small_tools, large_tools) == (300, 900)
    per_tool = (large - small) / (large_tools - small_tools)
    assert per_tool <= BYTES_PER_TOOL, f"{per_tool:.0f} bytes a tool"
