"""Catalogs drawn from a pool: mirror copies past its size, native text, a folder's pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capreg.evaluation.runner import EvalError
from capreg.evaluation.sampler import (
    PoolTool,
    catalog_sources,
    dataset_pool,
    folder_pool,
    with_variants,
)
from indexer.formats import parse_catalog
from indexer.model import Tool, ToolLink
from tests.conftest import DATASETS

ROOT = Path(__file__).resolve().parents[3]


def pool_tool(
    catalog: str,
    name: str,
    *,
    tags: tuple[str, ...] = (),
    examples: tuple[str, ...] = (),
    links: tuple[ToolLink, ...] = (),
) -> PoolTool:
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": "an x"}}}
    tool = Tool(
        catalog=catalog,
        name=name,
        description=f"Does {name}.",
        input_schema=schema,
        tags=tags,
        examples=examples,
        links=links,
    )
    return PoolTool(tool, catalog.title(), "")


def test_variants_fill_the_pool_with_distinct_ids() -> None:
    pool = [pool_tool("a", "first"), pool_tool("b", "second")]
    grown = with_variants(pool, 5)
    assert len(grown) == 5
    assert len({p.tool.id for p in grown}) == 5
    assert grown[2].title == pool[0].title
    assert grown[2].source == pool[0].tool.id


def test_catalog_sources_group_tools_by_catalog() -> None:
    sources = catalog_sources([pool_tool("a", "x"), pool_tool("b", "y"), pool_tool("a", "z")])
    assert [name for name, _ in sources] == ["a", "b"]
    assert [t.name for t in parse_catalog(sources[0][1], fmt="native").tools] == ["x", "z"]


def test_core_fields_leave_out_what_the_dataset_benchmarks_never_registered() -> None:
    tagged = pool_tool("a", "x", tags=("weather",), examples=("rain tomorrow?",))
    [(_, text)] = catalog_sources([tagged])
    assert set(json.loads(text)["tools"][0]) == {"name", "description", "input_schema"}


def test_all_fields_keep_tags_examples_and_links_to_tools_that_were_drawn() -> None:
    links = (ToolLink(rel="read", target_id="a/y"), ToolLink(rel="read", target_id="a/gone"))
    source = pool_tool("a", "x", tags=("weather",), examples=("rain tomorrow?",), links=links)
    [(_, text)] = catalog_sources([source, pool_tool("a", "y")], fields="all")
    catalog = parse_catalog(text, fmt="native")
    x = catalog.tools[0]
    assert x.tags == ("weather",)
    assert x.examples == ("rain tomorrow?",)
    assert [link.target_id for link in x.links] == ["a/y"]


def test_the_sample_catalogs_and_their_tasks_make_a_pool() -> None:
    pool = folder_pool(ROOT / "catalogs", ROOT / "bench" / "data" / "sample-tasks.jsonl")
    ids = {item.tool.id for item in pool.tools}
    assert len(ids) == len(pool.tools) == 300
    assert pool.tasks
    assert all(task.relevant <= ids for task in pool.tasks)
    assert pool.fields == "all"


def test_a_folder_pool_needs_a_folder(tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text("")
    with pytest.raises(EvalError, match="not a folder"):
        folder_pool(tmp_path / "missing", queries)


@pytest.mark.datasets
def test_one_dataset_pool_holds_only_that_sets_tools_and_tasks() -> None:
    pool = dataset_pool(DATASETS, "livemcpbench")
    assert pool.tasks
    catalogs = {entry.tool.catalog for entry in pool.tools}
    assert {r.partition("/")[0] for task in pool.tasks for r in task.relevant} <= catalogs
    everything = dataset_pool(DATASETS)
    assert len(pool.tools) < len(everything.tools)
    assert len(pool.tasks) < len(everything.tasks)
    assert pool.origin.startswith("labeled livemcpbench tasks; tools drawn from livemcpbench (")


@pytest.mark.datasets
def test_a_dataset_pool_names_the_sets_it_can_draw_from() -> None:
    with pytest.raises(EvalError, match="livemcpbench, stabletoolbench"):
        dataset_pool(DATASETS, "seal-tools")
