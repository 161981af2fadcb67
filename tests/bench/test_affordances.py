"""The travel scenario of bench/affordances.py: its catalogs lint clean, every scripted task is
a legal path through the workflow, and only the static side grows with the catalog."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench.affordances import CATALOGS, SCENARIO, measure, walk
from indexer.formats.lint import lint_catalog
from registry.core import Registry
from registry.errors import IllegalMove
from registry.store import SqliteStore
from tests.conftest import CountingEmbedder

TASKS = yaml.safe_load((SCENARIO / "tasks.yaml").read_text(encoding="utf-8"))


@pytest.fixture
def registry(tmp_path: Path, embedder: CountingEmbedder) -> Iterator[Registry]:
    store = SqliteStore(tmp_path / "travel.db")
    registry = Registry(store, embedder)
    registry.load()
    yield registry
    store.close()


@pytest.mark.parametrize("size", sorted(CATALOGS))
def test_the_scenario_catalogs_lint_clean(size: int) -> None:
    assert lint_catalog(CATALOGS[size].read_text(encoding="utf-8")) == []


def test_every_scripted_task_is_a_legal_path_ending_where_it_should(registry: Registry) -> None:
    registry.register(CATALOGS[7].read_text(encoding="utf-8"))
    ends = [walk(registry, "travel7", task["steps"])[-1].state for task in TASKS]
    assert ends == ["booked", "booked", "cancelled", "booked"]


def test_an_illegal_step_stops_the_walk(registry: Registry) -> None:
    registry.register(CATALOGS[7].read_text(encoding="utf-8"))
    with pytest.raises(IllegalMove, match="'travel7/book_flight' is not a legal move"):
        walk(registry, "travel7", ["search_flights", "book_flight"])


def test_only_the_static_side_grows_with_the_catalog(registry: Registry) -> None:
    small = measure(registry, 7, TASKS)
    large = measure(registry, 35, TASKS)
    for seven, thirty_five in zip(small, large, strict=True):
        assert thirty_five.affordances == seven.affordances
        assert thirty_five.static > 3 * seven.static
        assert seven.affordances < seven.static
