"""The context report's pieces: token counts, task selection and one task's discovery cost."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.context_tokens import (
    PoolTool,
    bridge_tools_tokens,
    catalog_sources,
    main,
    pick_tasks,
    run_task,
    static_tokens,
    with_variants,
)
from indexer.evaluation.datasets import LabeledQuery
from indexer.evaluation.tokens import count_tokens
from indexer.model import Tool
from registry.core import Registry


def _tool(catalog: str, name: str) -> PoolTool:
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": "an x"}}}
    return PoolTool(
        Tool(catalog=catalog, name=name, description=f"Does {name}.", input_schema=schema),
        catalog.title(),
        "",
    )


def test_static_tokens_grow_with_every_definition() -> None:
    one = static_tokens([_tool("a", "first")], "o200k_base")
    two = static_tokens([_tool("a", "first"), _tool("a", "second")], "o200k_base")
    assert 0 < one < two
    assert count_tokens("hello world", "cl100k_base") == 2


def test_variants_fill_the_pool_with_distinct_ids() -> None:
    pool = [_tool("a", "first"), _tool("b", "second")]
    grown = with_variants(pool, 5)
    assert len(grown) == 5
    assert len({p.tool.id for p in grown}) == 5
    assert grown[2].title == pool[0].title
    assert grown[2].source == pool[0].tool.id


def test_tasks_are_picked_only_when_their_tools_exist_and_fit() -> None:
    pool = {p.tool.id: p for p in [_tool("a", "x"), _tool("a", "y")]}
    tasks = [
        LabeledQuery(id="1", query="q", relevant=frozenset({"a/x"})),
        LabeledQuery(id="2", query="q", relevant=frozenset({"a/missing"})),
    ]
    chosen, gold = pick_tasks(random.Random(1), tasks, pool, 15)
    assert [t.id for t in chosen] == ["1"]
    assert gold == {"a/x"}


def test_catalog_sources_group_tools_by_catalog() -> None:
    sources = catalog_sources([_tool("a", "x"), _tool("b", "y"), _tool("a", "z")])
    assert [name for name, _ in sources] == ["a", "b"]


def test_one_discovery_task_costs_far_less_than_the_whole_catalog(
    sample_registry: Registry,
) -> None:
    task = LabeledQuery(
        id="t",
        query="open a support ticket for a customer",
        relevant=frozenset({"support/create_ticket"}),
    )
    tokens, found = run_task(sample_registry, task, "o200k_base")
    assert found == 1
    assert 0 < tokens < 3_000
    assert 300 < bridge_tools_tokens("o200k_base") <= 450


def test_a_missing_datasets_folder_is_one_line_and_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "c.db"
    code = main(["--datasets", str(tmp_path / "nowhere"), "--db", str(db)])
    assert code == 1
    assert "nowhere" in capsys.readouterr().err
    assert not db.exists()
